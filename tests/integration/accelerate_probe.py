"""A worker for the accelerate parity test: prints one line
ACCELERATE_PROBE {"argv", "env", "state"} with its argv, its whole environment and
what an accelerate.Accelerator() built in it observes (or the error it raised;
not under --use_deepspeed)."""

import json
import os
import sys


def observe():
    # Under --use_deepspeed Accelerator() imports deepspeed and transformers, which
    # takes most of a minute on a small machine; the variables say what it would see.
    if os.environ.get("ACCELERATE_USE_DEEPSPEED") == "true":
        return {"skipped": "deepspeed"}
    try:
        from accelerate import Accelerator
        accelerator = Accelerator()
        state = accelerator.state
        return {
            "distributed_type": str(state.distributed_type),
            "num_processes": state.num_processes,
            "process_index": state.process_index,
            "local_process_index": state.local_process_index,
            "mixed_precision": str(accelerator.mixed_precision),
            "device_type": accelerator.device.type,
            "is_main_process": accelerator.is_main_process,
        }
    except Exception as error:  # the outcome to compare, whatever it is
        return {"error": f"{type(error).__name__}: {str(error)[:200]}"}


print("ACCELERATE_PROBE " + json.dumps({"argv": sys.argv[1:], "env": dict(os.environ),
                                         "state": observe()}), flush=True)
