"""A worker for the accelerate parity test: prints one line
ACCELERATE_PROBE {"argv", "env", "state", "partial_state"} with its argv, its whole
environment, what an accelerate.Accelerator() built in it observes and what
accelerate's PartialState then reports (or the error raised; not under
--use_deepspeed)."""

import fcntl
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


def observe_partial_state():
    """What accelerate's PartialState reports once Accelerator() has set it up (it reads
    ACCELERATE_USE_CPU, which a bare PartialState() does not)."""
    if os.environ.get("ACCELERATE_USE_DEEPSPEED") == "true":
        return {"skipped": "deepspeed"}
    try:
        from accelerate import PartialState
        state = PartialState()
        return {
            "distributed_type": str(state.distributed_type),
            "num_processes": state.num_processes,
            "process_index": state.process_index,
            "is_main_process": state.is_main_process,
        }
    except Exception as error:  # the outcome to compare, whatever it is
        return {"error": f"{type(error).__name__}: {str(error)[:200]}"}


record = "ACCELERATE_PROBE " + json.dumps({"argv": sys.argv[1:], "env": dict(os.environ),
                                            "state": observe(),
                                            "partial_state": observe_partial_state()}) + "\n"
# Under accelerate launch the ranks share one stdout pipe, and a record (the whole
# environment) may pass the pipe's atomic write size: ranks take turns through a lock
# in the working directory (the test's), so that records never interleave.
with open("accelerate-probe.lock", "a") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    sys.stdout.write(record)
    sys.stdout.flush()
