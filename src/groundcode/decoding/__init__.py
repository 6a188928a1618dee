"""Decoding: the engine loop, guides (monitors), the vocab index, sampling, the HF adapter."""
