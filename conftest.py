"""Repository-wide test configuration.

pytest accepts ``pytest_plugins`` only in the root conftest, so the opt-in testing kit that
the first-party plugin suites use is enabled here, once, for the whole repository.
"""

pytest_plugins = ["pi_host.testing"]
