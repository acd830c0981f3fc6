"""Verification tools: the op checker and its sample registry."""

from .checker import CheckFailure, CheckReport, check_op, check_op_grad, check_sample
from .grad_check import GradCheckFailure, check_grad
from .samples import ErrorSample, Sample, get_samples, register_samples, samples_registered

__all__ = ["Sample", "ErrorSample", "register_samples", "get_samples", "samples_registered",
           "check_op", "check_op_grad", "check_sample", "check_grad", "CheckFailure", "CheckReport",
           "GradCheckFailure"]
