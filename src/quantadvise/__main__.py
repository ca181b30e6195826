from quantadvise.cli.app import run

run()
