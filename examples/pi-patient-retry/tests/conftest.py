# Turn on pi-host's testing kit: the make_host and run_cli fixtures.
pytest_plugins = ["pi_host.testing"]
