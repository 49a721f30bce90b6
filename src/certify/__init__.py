"""certify: the mathematics of certified unlearning (numpy/scipy only).

Noise calibration for the Gaussian mechanism, each method's sensitivity theorem, estimators
for the constants those theorems need, and the certificate that ties them together.
"""

from certify.certificate import Certificate, Constant
from certify.errors import InvalidInput
from certify.mechanisms import delta_for, epsilon_for, sigma_for

__all__ = ["Certificate", "Constant", "InvalidInput", "delta_for", "epsilon_for", "sigma_for"]
