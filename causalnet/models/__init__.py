"""causalnet.models"""
