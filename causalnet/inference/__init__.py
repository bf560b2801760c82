"""causalnet.inference"""
