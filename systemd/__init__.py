"""The systemd user units, shipped as package data of ``memoryd.systemd``.

This file only makes the folder a regular package, so ``importlib.resources``
finds the units the same way in a wheel and in an editable install (where the
folder is mapped in place rather than copied under ``memoryd/``).
"""
