"""save(path, tensors, metadata): a safetensors file from torch tensors without numpy or the
safetensors package (float64 and int64 only: what the reference scripts store). The bytes
go to path + ".tmp", which is then renamed over path."""
import json
import os
import struct

import torch

_CODES = {torch.float64: ("F64", "d"), torch.int64: ("I64", "q"), torch.bool: ("BOOL", "?")}


def save(path, tensors, metadata):
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous()
        code, fmt = _CODES[t.dtype]
        values = t.flatten().tolist()
        data = struct.pack(f"<{len(values)}{fmt}", *values)
        header[name] = {"dtype": code, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    os.replace(path + ".tmp", path)
