from kbseek.cli import main

main()
