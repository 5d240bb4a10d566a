"""A real worker for test_devices.py: launched by gangrun, it reports which devices its own
vendor runtime shows it, independently of gangrun (docs/devices.md, "Accelerators").

    device_worker.py OUT_DIR [--cuda] [--ze] [--torch] [--expect-torch-mask]

It prints one JSON line and writes the same document to OUT_DIR/rank.<RANK>.json
(atomically), so a test can both read it and tell that the worker ran:

    {"rank": int, "local_rank": int, "pid": int,
     "env": {VISIBILITY_VARIABLE: value, ...}       only the variables that are set
     "cuda": {"library", "init": rc, "count", "uuids": [...], "board_uuids": [...],
              "error"}                               with --cuda
     "ze": {"library", "init": rc, "drivers", "count", "uuids": [...], "names": [...],
            "subdevice_ids": [...], "sub_uuids": [[...], ...], "error"}   with --ze
     "torch": {"available", "count", "uuids": [...], "error"}   with --torch}

--cuda loads GANGRUN_CUDA_LIBRARY (the fake driver in tests; libcuda.so.1 when unset) with
ctypes and calls cuInit(0), cuDeviceGetCount, cuDeviceGet and cuDeviceGetUuid_v2. UUIDs are
written as nvidia-smi does: "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" in lower-case hex, or
"MIG-..." for a MIG instance (one whose cuDeviceGetUuid_v2 differs from the board's
cuDeviceGetUuid, the rule gangrun's probe uses too). cuInit failing (100: no device) gives
count 0.

--ze loads GANGRUN_LEVEL_ZERO_LIBRARY (libze_loader.so.1 when unset) and calls zeInit(0),
zeDriverGet, zeDeviceGet and zeDeviceGetProperties for each device's 16-byte UUID (32
lower-case hex digits, as gangrun prints it), and zeDeviceGetSubDevices for the UUIDs of its
tiles (COMPOSITE shows a card as one device, its tiles as sub-devices; FLAT shows none).

--torch imports torch and reports torch.cuda.device_count() and each device's UUID (where
this torch has get_device_properties(i).uuid). With --expect-torch-mask the worker also
fails (exit 3) unless torch's count equals the length of its CUDA_VISIBLE_DEVICES.

Plain Python, no dependency beyond the standard library (torch only with --torch).
"""

import ctypes
import json
import os
import sys

VISIBILITY_VARIABLES = (
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "ZE_AFFINITY_MASK", "ZE_FLAT_DEVICE_HIERARCHY",
    "ZE_ENABLE_PCI_ID_DEVICE_ORDER", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
    "HABANA_VISIBLE_MODULES", "ASCEND_RT_VISIBLE_DEVICES", "NEURON_RT_VISIBLE_CORES",
)


# ---- CUDA driver API -------------------------------------------------------------

class CUuuid(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_ubyte * 16)]


def cuda_uuid_text(raw, prefix):
    hexa = bytes(raw).hex()
    return f"{prefix}{hexa[0:8]}-{hexa[8:12]}-{hexa[12:16]}-{hexa[16:20]}-{hexa[20:32]}"


def cuda_view():
    library = os.environ.get("GANGRUN_CUDA_LIBRARY") or "libcuda.so.1"
    view = {"library": library, "init": None, "count": 0, "uuids": [], "board_uuids": [], "error": None}
    try:
        cuda = ctypes.CDLL(library)
    except OSError as error:
        view["error"] = f"cannot load {library}: {error}"
        return view
    rc = cuda.cuInit(ctypes.c_uint(0))
    view["init"] = rc
    if rc != 0:
        return view  # 100 (CUDA_ERROR_NO_DEVICE) when the mask hides everything
    count = ctypes.c_int(0)
    rc = cuda.cuDeviceGetCount(ctypes.byref(count))
    if rc != 0:
        view["error"] = f"cuDeviceGetCount returned {rc}"
        return view
    view["count"] = count.value
    get_v2 = getattr(cuda, "cuDeviceGetUuid_v2", None)
    get_v1 = getattr(cuda, "cuDeviceGetUuid", None)
    for ordinal in range(count.value):
        handle = ctypes.c_int(0)
        rc = cuda.cuDeviceGet(ctypes.byref(handle), ctypes.c_int(ordinal))
        if rc != 0:
            view["error"] = f"cuDeviceGet({ordinal}) returned {rc}"
            return view
        own, board = CUuuid(), CUuuid()
        rc = (get_v2 or get_v1)(ctypes.byref(own), handle)
        if rc != 0:
            view["error"] = f"cuDeviceGetUuid({ordinal}) returned {rc}"
            return view
        if get_v2 is not None and get_v1 is not None and get_v1(ctypes.byref(board), handle) == 0:
            board_bytes = bytes(board.bytes)
        else:
            board_bytes = bytes(own.bytes)
        mig = bytes(own.bytes) != board_bytes
        view["uuids"].append(cuda_uuid_text(own.bytes, "MIG-" if mig else "GPU-"))
        view["board_uuids"].append(cuda_uuid_text(board_bytes, "GPU-"))
    return view


# ---- Level Zero --------------------------------------------------------------------
# ze_device_properties_t as in Debian's <level_zero/ze_api.h> (1.8.12): 368 bytes on x86-64,
# uuid at offset 96, name at 112.

ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES = 0x3
ZE_DEVICE_PROPERTY_FLAG_SUBDEVICE = 0x2


class ZeDeviceProperties(ctypes.Structure):
    _fields_ = [
        ("stype", ctypes.c_uint32),
        ("pNext", ctypes.c_void_p),
        ("type", ctypes.c_uint32),
        ("vendorId", ctypes.c_uint32),
        ("deviceId", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("subdeviceId", ctypes.c_uint32),
        ("coreClockRate", ctypes.c_uint32),
        ("maxMemAllocSize", ctypes.c_uint64),
        ("maxHardwareContexts", ctypes.c_uint32),
        ("maxCommandQueuePriority", ctypes.c_uint32),
        ("numThreadsPerEU", ctypes.c_uint32),
        ("physicalEUSimdWidth", ctypes.c_uint32),
        ("numEUsPerSubslice", ctypes.c_uint32),
        ("numSubslicesPerSlice", ctypes.c_uint32),
        ("numSlices", ctypes.c_uint32),
        ("timerResolution", ctypes.c_uint64),
        ("timestampValidBits", ctypes.c_uint32),
        ("kernelTimestampValidBits", ctypes.c_uint32),
        ("uuid", ctypes.c_ubyte * 16),
        ("name", ctypes.c_char * 256),
    ]


assert ctypes.sizeof(ZeDeviceProperties) == 368, ctypes.sizeof(ZeDeviceProperties)
assert ZeDeviceProperties.uuid.offset == 96 and ZeDeviceProperties.name.offset == 112


def ze_device_uuid(ze, device):
    """(uuid hex, properties), or an error text."""
    properties = ZeDeviceProperties()
    properties.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES
    properties.pNext = None
    rc = ze.zeDeviceGetProperties(ctypes.c_void_p(device), ctypes.byref(properties))
    if rc != 0:
        return f"zeDeviceGetProperties returned {rc:#x}"
    return bytes(properties.uuid).hex(), properties


def ze_sub_device_uuids(ze, device):
    """The UUIDs of DEVICE's sub-devices (tiles; none under FLAT), or an error text."""
    count = ctypes.c_uint32(0)
    rc = ze.zeDeviceGetSubDevices(ctypes.c_void_p(device), ctypes.byref(count), None)
    if rc != 0:
        return f"zeDeviceGetSubDevices returned {rc:#x}"
    handles = (ctypes.c_void_p * count.value)()
    if count.value:
        rc = ze.zeDeviceGetSubDevices(ctypes.c_void_p(device), ctypes.byref(count), handles)
        if rc != 0:
            return f"zeDeviceGetSubDevices returned {rc:#x}"
    uuids = []
    for handle in handles[:count.value]:
        answer = ze_device_uuid(ze, handle)
        if isinstance(answer, str):
            return answer
        uuids.append(answer[0])
    return uuids


def ze_view():
    library = os.environ.get("GANGRUN_LEVEL_ZERO_LIBRARY") or "libze_loader.so.1"
    view = {"library": library, "init": None, "drivers": 0, "count": 0, "uuids": [], "names": [],
            "subdevice_ids": [], "sub_uuids": [], "error": None}
    try:
        ze = ctypes.CDLL(library)
    except OSError as error:
        view["error"] = f"cannot load {library}: {error}"
        return view
    rc = ze.zeInit(ctypes.c_uint32(0))
    view["init"] = rc
    if rc != 0:
        return view  # ZE_RESULT_ERROR_UNINITIALIZED: no driver, or the mask selected nothing
    drivers = ctypes.c_uint32(0)
    rc = ze.zeDriverGet(ctypes.byref(drivers), None)
    if rc != 0:
        view["error"] = f"zeDriverGet returned {rc:#x}"
        return view
    handles = (ctypes.c_void_p * drivers.value)()
    rc = ze.zeDriverGet(ctypes.byref(drivers), handles)
    if rc != 0:
        view["error"] = f"zeDriverGet returned {rc:#x}"
        return view
    view["drivers"] = drivers.value
    for driver in handles[:drivers.value]:
        count = ctypes.c_uint32(0)
        rc = ze.zeDeviceGet(ctypes.c_void_p(driver), ctypes.byref(count), None)
        if rc != 0:
            view["error"] = f"zeDeviceGet returned {rc:#x}"
            return view
        devices = (ctypes.c_void_p * count.value)()
        rc = ze.zeDeviceGet(ctypes.c_void_p(driver), ctypes.byref(count), devices)
        if rc != 0:
            view["error"] = f"zeDeviceGet returned {rc:#x}"
            return view
        for device in devices[:count.value]:
            answer = ze_device_uuid(ze, device)
            if isinstance(answer, str):
                view["error"] = answer
                return view
            uuid, properties = answer
            view["uuids"].append(uuid)
            view["names"].append(properties.name.decode(errors="replace"))
            subdevice = properties.flags & ZE_DEVICE_PROPERTY_FLAG_SUBDEVICE
            view["subdevice_ids"].append(properties.subdeviceId if subdevice else None)
            tiles = ze_sub_device_uuids(ze, device)
            if isinstance(tiles, str):
                view["error"] = tiles
                return view
            view["sub_uuids"].append(tiles)
        view["count"] += count.value
    return view


# ---- PyTorch -----------------------------------------------------------------------

def torch_view():
    view = {"available": False, "count": 0, "uuids": [], "error": None}
    try:
        import torch  # noqa: PLC0415 (only with --torch: importing it takes seconds)
    except ImportError as error:
        view["error"] = f"cannot import torch: {error}"
        return view
    view["available"] = bool(torch.cuda.is_available())
    if not view["available"]:
        return view
    view["count"] = torch.cuda.device_count()
    for index in range(view["count"]):
        uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
        if uuid is None:
            view["uuids"].append(None)  # this torch does not report UUIDs
            continue
        text = str(uuid)
        view["uuids"].append(text if text.startswith(("GPU-", "MIG-")) else "GPU-" + text)
    return view


# ---- main --------------------------------------------------------------------------

def main(argv):
    if not argv or argv[0].startswith("--"):
        print("usage: device_worker.py OUT_DIR [--cuda] [--ze] [--torch] [--expect-torch-mask]",
              file=sys.stderr)
        return 2
    out_dir, flags = argv[0], set(argv[1:])
    unknown = flags - {"--cuda", "--ze", "--torch", "--expect-torch-mask"}
    if unknown:
        print(f"device_worker.py: unknown flags {sorted(unknown)}", file=sys.stderr)
        return 2
    rank = int(os.environ.get("RANK", "-1"))
    doc = {
        "rank": rank,
        "local_rank": int(os.environ.get("LOCAL_RANK", "-1")),
        "pid": os.getpid(),
        "env": {name: os.environ[name] for name in VISIBILITY_VARIABLES if name in os.environ},
    }
    if "--cuda" in flags:
        doc["cuda"] = cuda_view()
    if "--ze" in flags:
        doc["ze"] = ze_view()
    status = 0
    if "--torch" in flags:
        doc["torch"] = torch_view()
        if "--expect-torch-mask" in flags:
            mask = os.environ.get("CUDA_VISIBLE_DEVICES")
            wanted = len(mask.split(",")) if mask else None
            if wanted is None or doc["torch"]["count"] != wanted:
                print(f"device_worker.py: torch sees {doc['torch']['count']} device(s), "
                      f"CUDA_VISIBLE_DEVICES={mask!r}", file=sys.stderr)
                status = 3
    line = json.dumps(doc, sort_keys=True)
    print(line, flush=True)
    path = os.path.join(out_dir, f"rank.{rank}.json")
    with open(path + ".tmp", "w") as f:
        f.write(line + "\n")
    os.replace(path + ".tmp", path)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
