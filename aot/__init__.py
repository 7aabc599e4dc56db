"""aot: ahead-of-time deployment of neural networks to microcontrollers."""

__version__ = "0.1.0"
