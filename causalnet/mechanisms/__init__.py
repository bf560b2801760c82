"""causalnet.mechanisms"""
