"""``python -m locustfiles``: the flags tokenswarm adds to Locust, which ``locust --help`` cannot show.

Locust prints its ``--help`` before it imports a locustfile (``argument_parser.parse_locustfile_option``),
so flags a locustfile registers never appear there. They work on Locust's command line all the same.
"""

from __future__ import annotations

import argparse
import sys

from locustfiles import conversations, options


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="locust -f locustfiles/locustfile.py",
        description="tokenswarm's flags for plain Locust (with Locust's own: `locust --help`)",
        epilog="example: locust -f locustfiles/locustfile.py --host http://127.0.0.1:8080 --dataset sharegpt-v3 "
               "--allow-truncated --num-prompts 200 -u 16 -r 16 --headless")
    options.add_arguments(parser)
    conversations.add_arguments(parser)
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
