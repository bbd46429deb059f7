"""The package version (its own module, so that modules can read it without importing the package)."""
__version__ = "0.1.0"

#: The distribution's name on the package index (``gamut`` there is an unrelated project); the
#: import and the command are ``gamut``.
DISTRIBUTION = "gamut-rna"


def install_hint(extra: str) -> str:
    """The command that installs one of gamut's optional extras: ``pip install 'gamut-rna[dask]'``."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"
