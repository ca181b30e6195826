from quantadvise.cli.app import main

main()
