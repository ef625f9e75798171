from anyop.cli import main

main()
