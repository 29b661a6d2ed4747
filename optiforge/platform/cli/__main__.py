from optiforge.platform.cli import main

main()
