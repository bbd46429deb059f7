"""miRNA target scanning with miRanda 3.3a's exact model. Call ``gamut.scan(queries, references)``."""
from gamut._callable import make_package_callable

make_package_callable(__name__, "gamut.scan.api", "scan")
