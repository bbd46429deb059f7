from gamut.cli import run

run()
