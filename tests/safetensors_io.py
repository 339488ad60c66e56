"""safetensors files by hand, for the tests' PyTorch scripts (the safetensors package is not
installed here): an 8-byte little-endian header length, the JSON header
{"__metadata__": {...}, name: {"dtype", "shape", "data_offsets"}}, then the raw little-endian
bytes (https://github.com/huggingface/safetensors, format section), as
safetensors.torch.load_file and save_file read and write them.
"""
import json
import struct

import numpy as np
import torch

# The dtypes the tests meet: safetensors' code -> (NumPy's little-endian dtype, torch's dtype).
DTYPES = {"F32": ("<f4", torch.float32), "F64": ("<f8", torch.float64),
          "I64": ("<i8", torch.int64)}


def read_safetensors(path, dtypes=tuple(DTYPES)):
    """(metadata, {name: tensor}) of the file; ValueError naming a tensor of another dtype."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    meta = header.pop("__metadata__", {})
    tensors = {}
    for name, e in header.items():
        if e["dtype"] not in dtypes:
            raise ValueError(f"{name} is {e['dtype']}, expected {' or '.join(dtypes)}")
        begin, end = e["data_offsets"]
        a = np.frombuffer(body[begin:end], dtype=DTYPES[e["dtype"]][0]).reshape(e["shape"])
        tensors[name] = torch.from_numpy(a.copy())
    return meta, tensors


def write_safetensors(path, tensors, metadata=None):
    """Writes {name: tensor} (F32, F64 or I64), in name order, with `metadata`."""
    codes = {torch_dtype: code for code, (_, torch_dtype) in DTYPES.items()}
    header, blobs, offset = {"__metadata__": metadata or {}}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous()
        raw = t.numpy().astype(DTYPES[codes[t.dtype]][0]).tobytes()
        header[name] = {"dtype": codes[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
