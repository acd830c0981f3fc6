"""Experimental APIs: ``flow.experimental.custom_op_module`` (OneFlow's directory
convention for user ops written in Python with NumPy kernels)."""

from .custom_op_module import CustomOpModule, custom_op_module

__all__ = ["CustomOpModule", "custom_op_module"]
