"""gangrun, a native launcher for distributed training jobs.

The wheel installs the `gangrun` executable itself into the environment's scripts
directory (bin/); this package only lets `python -m gangrun` find and run it.
"""

import os
import sys
import sysconfig


def find_gangrun_bin() -> str:
    """The path of the gangrun executable this package was installed with: in the scripts
    directory of the environment's scheme (or of the user scheme after `pip install --user`).
    Raises FileNotFoundError when neither holds it."""
    name = "gangrun"
    candidates = [os.path.join(sysconfig.get_path("scripts"), name)]
    candidates.append(os.path.join(sysconfig.get_path("scripts", scheme=f"{os.name}_user"), name))
    # pip install --target DIR: DIR/bin beside the package directory.
    candidates.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bin", name))
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise FileNotFoundError(f"the gangrun executable is not installed beside this package ({sys.prefix}); "
                            f"looked in: {', '.join(candidates)}")
