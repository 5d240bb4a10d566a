"""The worker scripts/gpu-check launches, through gangrun and through torchrun.

    gpu_check_worker.py MODE OUT_DIR [--torch]

Each worker writes one JSON document to OUT_DIR/<MODE>.<RANK>.json (atomically, so a file
there means the worker got that far) and prints a line now and then, so gangrun's hang watch
sees progress until the worker means to go silent. MODE is one of:

  masks     what this worker was given and what its CUDA driver shows it:
            {"rank", "local_rank", "mask": CUDA_VISIBLE_DEVICES or null,
             "driver": {"uuids": [...], "error"}, "torch": {"count", "uuids", "error"}}
            The driver is asked through ctypes (GANGRUN_CUDA_LIBRARY, else libcuda.so.1), so
            the stand-in driver answers as the real one would; torch only with --torch.
  nccl      an all-reduce of (rank + 1) over NCCL; {"rank", "sum", "expected", "nccl"}
  affinity  {"rank", "local_rank", "cpus": sched_getaffinity(0), "mems": Mems_allowed_list}
  hang      five all-reduces over NCCL with the flight recorder on, then the last rank stops
            taking part and every rank goes silent: the others wait in a sixth all-reduce
            (a world of one waits in a sleep), until gangrun's hang watch stops the gang.

Only the standard library, and torch in the modes that need it.
"""

import ctypes
import datetime
import json
import os
import sys
import time

RANK = int(os.environ.get("RANK", "-1"))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", "-1"))
WORLD = int(os.environ.get("WORLD_SIZE", "1"))


def say(text):
    print(f"gpu_check_worker rank {RANK}: {text}", flush=True)


def write(out_dir, mode, doc):
    path = os.path.join(out_dir, f"{mode}.{RANK}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f)
    os.replace(path + ".tmp", path)


def uuid_text(raw):
    digits = bytes(raw).hex()
    return f"GPU-{digits[0:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:32]}"


def driver_view():
    """The UUIDs the CUDA driver shows this process, in its order (cuDeviceGetUuid)."""
    library = os.environ.get("GANGRUN_CUDA_LIBRARY") or "libcuda.so.1"
    view = {"library": library, "uuids": [], "error": None}
    try:
        cuda = ctypes.CDLL(library)
    except OSError as error:
        view["error"] = f"cannot load {library}: {error}"
        return view
    rc = cuda.cuInit(ctypes.c_uint(0))
    if rc == 100:  # CUDA_ERROR_NO_DEVICE: the mask hides every device
        return view
    if rc != 0:
        view["error"] = f"cuInit returned {rc}"
        return view
    count = ctypes.c_int(0)
    if (rc := cuda.cuDeviceGetCount(ctypes.byref(count))) != 0:
        view["error"] = f"cuDeviceGetCount returned {rc}"
        return view
    for ordinal in range(count.value):
        handle = ctypes.c_int(0)
        raw = (ctypes.c_ubyte * 16)()
        if (rc := cuda.cuDeviceGet(ctypes.byref(handle), ctypes.c_int(ordinal))) != 0:
            view["error"] = f"cuDeviceGet({ordinal}) returned {rc}"
            return view
        # v1 gives a board's UUID, which is what nvidia-smi and gangrun's device list name
        # outside MIG.
        if (rc := cuda.cuDeviceGetUuid(ctypes.byref(raw), handle)) != 0:
            view["error"] = f"cuDeviceGetUuid({ordinal}) returned {rc}"
            return view
        view["uuids"].append(uuid_text(raw))
    return view


def torch_view():
    view = {"version": None, "count": 0, "uuids": [], "error": None}
    try:
        import torch  # noqa: PLC0415 (seconds to import: only in the modes that need it)
    except ImportError as error:
        view["error"] = f"cannot import torch: {error}"
        return view
    view["version"] = torch.__version__
    if not torch.cuda.is_available():
        view["error"] = "torch.cuda.is_available() is False"
        return view
    view["count"] = torch.cuda.device_count()
    for index in range(view["count"]):
        uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
        text = None if uuid is None else str(uuid)
        view["uuids"].append(text if text is None or text.startswith(("GPU-", "MIG-")) else "GPU-" + text)
    return view


def masks(out_dir, with_torch):
    doc = {"rank": RANK, "local_rank": LOCAL_RANK, "mask": os.environ.get("CUDA_VISIBLE_DEVICES"),
           "driver": driver_view()}
    if with_torch:
        doc["torch"] = torch_view()
    write(out_dir, "masks", doc)


def affinity(out_dir):
    mems = None
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("Mems_allowed_list:"):
                mems = line.split(":", 1)[1].strip()
    write(out_dir, "affinity", {"rank": RANK, "local_rank": LOCAL_RANK,
                                "cpus": sorted(os.sched_getaffinity(0)), "mems": mems})


def init_nccl():
    say("imports torch")
    import torch  # noqa: PLC0415
    import torch.distributed as dist  # noqa: PLC0415

    torch.cuda.set_device(LOCAL_RANK)
    say(f"torch {torch.__version__} imported; init_process_group(nccl)")
    # Longer than gangrun's hang timeout in the hang mode, so gangrun, not NCCL's watchdog,
    # ends a hung gang; short enough that a broken node fails this check within the budget.
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=120))
    return torch, dist


def nccl(out_dir):
    torch, dist = init_nccl()
    value = torch.full((1024,), float(RANK + 1), device="cuda")
    dist.all_reduce(value)
    torch.cuda.synchronize()
    expected = WORLD * (WORLD + 1) / 2
    got = value.cpu().unique().tolist()
    try:
        import torch.cuda.nccl  # noqa: PLC0415
        version = ".".join(str(part) for part in torch.cuda.nccl.version())
    except (ImportError, AttributeError, RuntimeError, TypeError):
        version = None
    write(out_dir, "nccl", {"rank": RANK, "sum": got, "expected": expected, "nccl": version})
    dist.destroy_process_group()
    say(f"all_reduce gave {got}, expected {expected}")


def hang(out_dir):
    torch, dist = init_nccl()
    value = torch.ones(1024, device="cuda")
    for step in range(5):
        dist.all_reduce(value)
        torch.cuda.synchronize()
        say(f"all_reduce {step} done")
    write(out_dir, "hang", {"rank": RANK, "env": {k: v for k, v in os.environ.items()
                                                  if k.startswith(("TORCH_NCCL_", "TORCH_FR_"))}})
    if RANK == WORLD - 1:
        say("leaves the collectives and goes silent")
        time.sleep(600)
    else:
        say("waits in a sixth all_reduce the last rank never joins")
        dist.all_reduce(value)
        torch.cuda.synchronize()
        time.sleep(600)


def main(argv):
    if len(argv) < 2 or argv[0] not in ("masks", "nccl", "affinity", "hang"):
        print("usage: gpu_check_worker.py masks|nccl|affinity|hang OUT_DIR [--torch]", file=sys.stderr)
        return 2
    mode, out_dir = argv[0], argv[1]
    if mode == "masks":
        masks(out_dir, "--torch" in argv[2:])
    elif mode == "affinity":
        affinity(out_dir)
    elif mode == "nccl":
        nccl(out_dir)
    else:
        hang(out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
