"""Functor implementations, one module per op family."""
