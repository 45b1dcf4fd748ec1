"""dprelease: publish sensitive data under epsilon-differential privacy.

Data flows one way: read -> declare the public domain -> algorithm (mechanisms
from :mod:`dprelease.privacy`, every use charged to a budget accountant) ->
release object (data + manifest) -> writer / evaluator.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
