"""Target-site accessibility: ViennaRNA's local partition function (RNAplfold's ``-W -L -u``) per
reference, as probabilities that stretches are unpaired and their opening energies (``gamut access``,
:func:`gamut.accessibility`)."""
