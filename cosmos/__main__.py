from cosmos.cli import run

run()
