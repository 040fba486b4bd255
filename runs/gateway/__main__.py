from runs.gateway.server import main

main()
