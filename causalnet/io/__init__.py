"""causalnet.io"""
