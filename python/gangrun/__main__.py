"""`python -m gangrun ARGS`: runs the gangrun executable with ARGS, in this process."""

import os
import sys

from gangrun import find_gangrun_bin


def main() -> None:
    try:
        gangrun = find_gangrun_bin()
    except FileNotFoundError as error:
        print(f"gangrun: {error}", file=sys.stderr)
        sys.exit(127)
    os.execv(gangrun, [gangrun, *sys.argv[1:]])


if __name__ == "__main__":
    main()
