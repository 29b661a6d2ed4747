"""Bridges to other tools' interfaces (the top layer, beside the platform).

``optiforge.integrations.optuna``: optiforge's black-box agents as Optuna samplers
(``pip install optiforge[optuna]``).
"""
