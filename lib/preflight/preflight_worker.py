# gangrun preflight's worker: what one worker of the launch sees, and what the
# gang measures together. gangrun starts it as the job's program, with the
# launch's options, so it runs under the interpreter, environment, masks and
# rendezvous the job would get. It prints nothing on success: the head node's
# worker writes every node's answer as one JSON document, which gangrun judges
# and prints (lib/preflight/checks.hpp).
#
# Nodes exchange their facts through the job's store with `gangrun store`
# (GANGRUN_PREFLIGHT_GANGRUN), not through torch, so a node whose interpreter
# cannot import torch is still heard and named. The collectives run over
# torch.distributed only when every rank imported it.
#
# With the job's secret, every value is sealed with GANGRUN_PREFLIGHT_KEY, a key
# derived from it, and a value whose seal does not check is refused, never
# believed (lib/preflight/sealing.hpp says how).
import hashlib
import hmac
import json
import os
import platform
import resource
import signal
import socket
import subprocess
import sys
import time

ENV = os.environ
# Every variable this worker reads as its input, with its value when unset (REQUIRED: the
# worker fails without it; None: unset means "not given"). lib/preflight/facts_schema.hpp's
# k_variables lists the same, in this order, and docs/preflight.md says what each means; the
# masks and the compared variables it records are facts, not inputs.
REQUIRED = object()
VARIABLES = {
    "GANGRUN_PREFLIGHT_GANGRUN": REQUIRED,
    "GANGRUN_PREFLIGHT_RESULT": None,
    "GANGRUN_PREFLIGHT_TIMEOUT": "60",
    "GANGRUN_PREFLIGHT_LOG_DIR": None,  # the working directory
    "GANGRUN_PREFLIGHT_NODE": "{}",
    "GANGRUN_PREFLIGHT_BACKEND": None,  # gloo
    "GANGRUN_PREFLIGHT_KEY": None,  # values are not sealed
    "GANGRUN_PREFLIGHT_BYTES": str(4 << 20),
    "RANK": REQUIRED,
    "WORLD_SIZE": REQUIRED,
    "LOCAL_RANK": REQUIRED,
    "GROUP_RANK": "0",
    "MASTER_ADDR": REQUIRED,
    "MASTER_PORT": REQUIRED,
}


def variable(name):
    """NAME's value in the environment; when it is unset, its fallback in VARIABLES (a
    required one raises KeyError)."""
    fallback = VARIABLES[name]
    return ENV[name] if fallback is REQUIRED else ENV.get(name, fallback)


TIMEOUT = float(variable("GANGRUN_PREFLIGHT_TIMEOUT"))
GANGRUN = variable("GANGRUN_PREFLIGHT_GANGRUN")
RANK = int(variable("RANK"))
WORLD = int(variable("WORLD_SIZE"))
LOCAL_RANK = int(variable("LOCAL_RANK"))
NODE_RANK = int(variable("GROUP_RANK"))
PREFIX = "gangrun_preflight/"
KEY_HEX = variable("GANGRUN_PREFLIGHT_KEY")
KEY = bytes.fromhex(KEY_HEX) if KEY_HEX else None
MAC_DIGITS = 64

# Variables that should read the same on every node (the gang's own, which differ per node
# or rank by design, are left out).
COMPARED_PREFIXES = ("NCCL_", "GLOO_", "TORCH_", "CUDA_", "OMP_", "MKL_", "FI_", "UCX_", "LD_", "PYTHON")
PER_NODE = {"CUDA_VISIBLE_DEVICES", "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME",
            "OMP_NUM_THREADS", "TORCHELASTIC_ERROR_FILE", "TORCHELASTIC_RUN_ID", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE",
            "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_USE_AGENT_STORE",
            "TORCHELASTIC_ENABLE_FILE_TIMER", "TORCHELASTIC_TIMER_FILE", "PYTHONUNBUFFERED"}
MASKS = ("CUDA_VISIBLE_DEVICES", "ZE_AFFINITY_MASK", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")


def store_endpoint():
    host = variable("MASTER_ADDR")
    if ":" in host and not host.startswith("["):
        host = "[" + host + "]"
    return host + ":" + variable("MASTER_PORT")


def store(action, *keys, value=None, timeout=TIMEOUT):
    """Runs `gangrun store ACTION KEYS` against the job's store; (exit code, output bytes, error text)."""
    argv = [GANGRUN, "store", action, "--endpoint", store_endpoint(), "--timeout", str(max(timeout, 1))]
    argv += [PREFIX + key for key in keys]
    done = subprocess.run(argv, input=value, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return done.returncode, done.stdout, done.stderr.decode(errors="replace").strip()


class Refused(Exception):
    """A value in the store that this worker does not believe; its text names the key."""


def mac(key, payload):
    """The seal of PAYLOAD under the store key PREFIX + KEY (sealing.hpp), as hex bytes."""
    return hmac.new(KEY, (PREFIX + key).encode() + b"\0" + payload, hashlib.sha256).hexdigest().encode()


def seal(key, payload):
    return payload if KEY is None else mac(key, payload) + b":" + payload


def unseal(key, value):
    """PAYLOAD of a stored VALUE; raises Refused when this job has a key and VALUE's seal does not check."""
    sealed = len(value) > MAC_DIGITS and value[MAC_DIGITS:MAC_DIGITS + 1] == b":" and \
        all(digit in b"0123456789abcdef" for digit in value[:MAC_DIGITS])
    payload = value[MAC_DIGITS + 1:] if sealed else value
    if KEY is None:
        return payload
    if not sealed:
        raise Refused(PREFIX + key + " carries no MAC: no worker of this preflight wrote it (its writer lacks "
                      "the key gangrun derives from the job's secret)")
    if not hmac.compare_digest(mac(key, payload), value[:MAC_DIGITS]):
        raise Refused(PREFIX + key + " carries a MAC that this job's key did not make: it was forged, or "
                      "written by a preflight with another job secret or run id")
    return payload


def put(key, document):
    code, _, error = store("set", key, value=seal(key, json.dumps(document).encode()))
    if code != 0:
        raise SystemExit("preflight: could not write to the job's store: " + error)


def take(key, timeout=TIMEOUT):
    """KEY's JSON object; None when the store had none within TIMEOUT; raises Refused (see unseal)."""
    code, out, error = store("get", key, timeout=timeout)
    if code != 0:
        return None
    try:
        document = json.loads(unseal(key, out).decode())
    except (UnicodeDecodeError, ValueError):
        document = None
    if not isinstance(document, dict):
        raise Refused(PREFIX + key + " is not a JSON object")
    return document


def space(path):
    try:
        stat = os.statvfs(path)
    except OSError as error:
        return {"path": path, "error": error.strerror or str(error)}
    return {"path": path, "size": stat.f_frsize * stat.f_blocks, "free": stat.f_frsize * stat.f_bavail}


def limit(which):
    soft, hard = resource.getrlimit(which)
    as_number = lambda value: None if value == resource.RLIM_INFINITY else value
    return {"soft": as_number(soft), "hard": as_number(hard)}


def torch_facts():
    try:
        import torch
        import torch.distributed as dist
    except BaseException as error:  # an ImportError, or a library that fails to load
        return None, {"error": "%s: %s" % (type(error).__name__, error)}
    facts = {"version": torch.__version__, "cuda": torch.version.cuda, "gloo": dist.is_gloo_available(),
             "nccl_available": dist.is_nccl_available(), "cuda_devices": 0}
    try:
        if torch.cuda.is_available():
            facts["cuda_devices"] = torch.cuda.device_count()
            facts["device_names"] = [torch.cuda.get_device_name(i) for i in range(facts["cuda_devices"])]
            facts["nccl"] = ".".join(str(part) for part in torch.cuda.nccl.version()) \
                if isinstance(torch.cuda.nccl.version(), tuple) else str(torch.cuda.nccl.version())
    except BaseException as error:
        facts["cuda_error"] = "%s: %s" % (type(error).__name__, error)
    return torch, facts


def rank_facts(torch_answer):
    facts = {"rank": RANK, "local_rank": LOCAL_RANK, "node_rank": NODE_RANK, "host": socket.gethostname(),
             "pid": os.getpid(), "masks": {name: ENV[name] for name in MASKS if name in ENV},
             "torch": torch_answer}
    if LOCAL_RANK == 0:
        facts["python"] = {"version": platform.python_version(), "executable": sys.executable}
        log_dir = variable("GANGRUN_PREFLIGHT_LOG_DIR")
        facts["log_dir"] = space(os.getcwd() if log_dir is None else log_dir)
        facts["shm"] = space("/dev/shm")
        facts["open_files"] = limit(resource.RLIMIT_NOFILE)
        facts["memlock"] = limit(resource.RLIMIT_MEMLOCK)
        facts["variables"] = {name: value for name, value in ENV.items()
                              if name.startswith(COMPARED_PREFIXES) and name not in PER_NODE}
        facts["node"] = json.loads(variable("GANGRUN_PREFLIGHT_NODE"))
    return facts


def timed_all_reduce(torch, dist, group, size_bytes, device, repeats=5):
    """Seconds one all-reduce of SIZE_BYTES takes in GROUP (the best of REPEATS, after one warm-up)."""
    tensor = torch.ones(size_bytes // 4, dtype=torch.float32, device=device)
    dist.all_reduce(tensor, group=group)
    best = None
    for _ in range(repeats):
        if device != "cpu":
            torch.cuda.synchronize()
        start = time.perf_counter()
        dist.all_reduce(tensor, group=group)
        if device != "cpu":
            torch.cuda.synchronize()
        took = time.perf_counter() - start
        best = took if best is None else min(best, took)
    return best


def bus_bandwidth(size_bytes, members, seconds):
    """Bytes per second each link carried, as nccl-tests counts an all-reduce's bus bandwidth."""
    return size_bytes * 2 * (members - 1) / members / seconds


def clock_offset(torch, dist, device):
    """This rank's clock minus rank 0's, in seconds: rank 0 sends its time, each rank reads its own
    on arrival; the least of five is the offset plus the shortest delivery."""
    best = None
    for _ in range(5):
        dist.barrier()
        stamp = torch.tensor([time.time()], dtype=torch.float64, device=device)
        dist.broadcast(stamp, src=0)
        offset = time.time() - float(stamp.item())
        best = offset if best is None else min(best, offset, key=abs)
    return best


def ring_of_pairs(leaders):
    """Two rounds of disjoint pairs that put each node beside its two neighbours in a ring."""
    first = [(leaders[i], leaders[i + 1]) for i in range(0, len(leaders) - 1, 2)]
    second = [(leaders[i], leaders[(i + 1) % len(leaders)]) for i in range(1, len(leaders), 2)]
    if len(leaders) <= 2:
        second = []
    return [first, second]


def collectives(torch, dist, leaders):
    """Clock offsets, the gang's all-reduce, and node pairs' all-reduces; every rank calls it."""
    # NCCL where the launch gives CUDA devices and torch can use them; else gloo (the devices
    # check says why torch cannot).
    use_cuda = variable("GANGRUN_PREFLIGHT_BACKEND") == "nccl" and torch.cuda.is_available()
    backend = "nccl" if use_cuda else "gloo"
    device = "cuda:%d" % 0 if use_cuda else "cpu"
    if use_cuda:
        torch.cuda.set_device(0)
    from datetime import timedelta
    started = time.perf_counter()
    dist.init_process_group(backend, timeout=timedelta(seconds=TIMEOUT))
    answer = {"backend": backend, "init_s": time.perf_counter() - started}
    answer["clock_offset_s"] = clock_offset(torch, dist, device)
    size = int(variable("GANGRUN_PREFLIGHT_BYTES"))
    answer["bytes"] = size
    if WORLD > 1:
        seconds = timed_all_reduce(torch, dist, None, size, device)
        answer["gang"] = {"seconds": seconds, "bus_bytes_per_s": bus_bandwidth(size, WORLD, seconds)}
    pairs = []
    for round_of_pairs in ring_of_pairs(leaders):
        groups = [(pair, dist.new_group(list(pair))) for pair in round_of_pairs]
        for pair, group in groups:
            if RANK in pair:
                seconds = timed_all_reduce(torch, dist, group, size, device)
                pairs.append({"ranks": list(pair), "seconds": seconds,
                              "bus_bytes_per_s": bus_bandwidth(size, 2, seconds)})
        dist.barrier()
    answer["pairs"] = pairs
    gathered = [None] * WORLD
    dist.all_gather_object(gathered, answer)
    dist.destroy_process_group()
    return gathered


def head(facts, torch, dist):
    """Rank 0: every rank's facts, then the collectives when every rank can run them."""
    keys = ["facts/%d" % rank for rank in range(WORLD)]
    deadline = time.monotonic() + TIMEOUT
    gathered = {}
    refused = {}
    for rank, key in enumerate(keys):
        left = deadline - time.monotonic()
        try:
            answer = take(key, timeout=left) if left > 0 else None
            if answer is None:
                code, _, _ = store("check", key, timeout=5)
                answer = take(key, timeout=5) if code == 0 else None
        except Refused as why:
            refused[rank] = str(why)
            answer = None
        if answer is not None:
            gathered[rank] = answer
    ranks = [gathered.get(rank) for rank in range(WORLD)]
    silent = [rank for rank in range(WORLD) if ranks[rank] is None and rank not in refused]
    without_torch = [r["rank"] for r in ranks if r is not None and "error" in r["torch"]]
    result = {"world_size": WORLD, "timeout_s": TIMEOUT, "store": store_endpoint(), "ranks": ranks,
              "silent_ranks": silent, "sealed": KEY is not None,
              "refused": [{"rank": rank, "key": PREFIX + keys[rank], "why": why} for rank, why in refused.items()]}
    go = not silent and not without_torch and not refused
    leaders = sorted(r["rank"] for r in ranks if r is not None and r["local_rank"] == 0)
    put("plan", {"collectives": go, "leaders": leaders})
    if go:
        try:
            result["collectives"] = collectives(torch, dist, leaders)
        except BaseException as error:
            result["collectives_error"] = "%s: %s" % (type(error).__name__, error)
    else:
        result["collectives_skipped"] = "ranks %s did not answer" % silent if silent else \
            "the facts of ranks %s were refused" % sorted(refused) if refused else \
            "ranks %s cannot import torch" % without_torch
    put("result", result)
    return result


def give_up(why):
    """Ends this worker with a failure, which ends the whole preflight job: a rank that never
    answers would otherwise keep every node waiting for it."""
    print("preflight: " + why, file=sys.stderr)
    raise SystemExit(1)


def follower(torch, dist):
    try:
        return follow(torch, dist)
    except Refused as why:
        give_up(str(why))


def follow(torch, dist):
    plan = take("plan", timeout=TIMEOUT * 2)
    if plan is None:
        give_up("rank 0 published no plan within %g s" % (TIMEOUT * 2))
    if plan["collectives"]:
        try:
            collectives(torch, dist, plan["leaders"])
        except BaseException:
            pass  # rank 0 says what failed
    if LOCAL_RANK != 0:
        return None
    result = take("result", timeout=TIMEOUT * 2)
    if result is None:
        give_up("rank 0 published no result within %g s" % (TIMEOUT * 2))
    return result


def main():
    # Whatever hangs here (an import on a stuck file system, a collective) ends the worker,
    # so the preflight ends by itself; rank 0 names what it did not hear.
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(int(TIMEOUT * 4) + 10)
    torch, torch_answer = torch_facts()
    dist = None
    if torch is not None:
        import torch.distributed as dist
    facts = rank_facts(torch_answer)
    put("facts/%d" % RANK, facts)
    result = head(facts, torch, dist) if RANK == 0 else follower(torch, dist)
    out = variable("GANGRUN_PREFLIGHT_RESULT")
    if out and result is not None and LOCAL_RANK == 0:
        with open(out + ".part", "w") as stream:
            json.dump(dict(result, this_node=NODE_RANK), stream)
        os.replace(out + ".part", out)
    if RANK == 0 and result["silent_ranks"]:
        give_up("ranks %s sent nothing within %g s; ending the preflight" % (result["silent_ranks"], TIMEOUT))


main()
