"""The dialects of loaders outside the GPU serving kernels: bitsandbytes (quantized at load time by
transformers), GGUF (llama.cpp; the types live in the .gguf file) and MLX (Apple; a bare
``{group_size, bits}``)."""

from __future__ import annotations

from typing import Any

from .args import field_error, get_field, get_int, get_str_list, req_group_size, short
from .quant import CheckpointQuant, QArgs, QuantGroup, make_group


def _bnb_flag(qc: dict[str, Any], name: str, where: str) -> bool:
    for k in (name, f"_{name}"):
        if k in qc and qc[k] is not None:
            if not isinstance(qc[k], bool):
                raise field_error(f"{where}.{k}", f"must be true or false, got {short(qc[k])}")
            if qc[k]:
                return True
    return False


def parse_bitsandbytes(qc: dict[str, Any], _hf: Any, where: str, dtype: str, key: str) -> CheckpointQuant:
    four = _bnb_flag(qc, "load_in_4bit", where)
    eight = _bnb_flag(qc, "load_in_8bit", where)
    if four == eight:
        raise field_error(f"{where}.load_in_4bit", "exactly one of load_in_4bit and load_in_8bit must be true")
    skip = get_str_list(qc, "llm_int8_skip_modules", where, default=())
    details: dict[str, Any] = {}
    if four:
        qtype = get_field(qc, "bnb_4bit_quant_type", where, str, default="fp4")
        if qtype not in ("nf4", "fp4"):
            raise field_error(f"{where}.bnb_4bit_quant_type", f"must be 'nf4' or 'fp4', got {short(qtype)}")
        dq = get_field(qc, "bnb_4bit_use_double_quant", where, bool, default=False)
        w = QArgs(num_bits=4, type="float" if qtype == "fp4" else "int", strategy="group", group_size=64,
                  scale_dtype="uint8" if dq else "fp32", element="nf4" if qtype == "nf4" else "fp4_e2m1",
                  scale2_group=64 * 256 if dq else None)  # bitsandbytes functional.py quantize_4bit: blocksize
                  # 64; compress_statistics quantizes the absmax in blocks of 256 with an fp32 absmax each
        layout = "bnb-4bit-dq" if dq else "bnb-4bit"
        name = f"bnb-{qtype}" + ("-dq" if dq else "")
        details = {"bnb_4bit_quant_type": qtype, "bnb_4bit_use_double_quant": dq,
                   "bnb_4bit_compute_dtype": qc.get("bnb_4bit_compute_dtype"),
                   "bnb_4bit_quant_storage": qc.get("bnb_4bit_quant_storage")}
    else:
        w = QArgs(num_bits=8, type="int", strategy="channel", scale_dtype="fp32")
        layout = None
        name = "bnb-int8"
        details = {"llm_int8_threshold": qc.get("llm_int8_threshold")}
    g = make_group(name, ("Linear",), w, None, scale_format="fp32", scope="all_linears", fmt=name, layout=layout,
                   where=where)
    return CheckpointQuant(quant_method=key, family="bitsandbytes", found_in=where, format=name,
                           producer="bitsandbytes (transformers)", groups=(g,), ignore=skip,
                           ignore_style="substring", quantize_lm_head=False, details=details)


def parse_gguf(qc: dict[str, Any], _hf: Any, where: str, dtype: str, key: str) -> CheckpointQuant:
    qtype = qc.get("quant_type") or qc.get("gguf_type") or qc.get("file_type") or (
        qc.get("bits") if isinstance(qc.get("bits"), str) else None)
    details = {k: v for k, v in qc.items() if k != "quant_method"}
    g = QuantGroup(name="gguf", targets=("all tensors",), scope="unknown", format="gguf",
                   notes=("GGUF stores a type per tensor (Q4_K, Q6_K, ...) inside the .gguf file, not in "
                          "quantization_config",))
    return CheckpointQuant(quant_method=key, family="gguf", found_in=where, format="gguf", groups=(g,),
                           producer="llama.cpp GGUF" + (f" {qtype}" if isinstance(qtype, str) else ""),
                           details=details,
                           warnings=("GGUF per-tensor quantization types live in the .gguf file; the size on disk is "
                                     "not predicted from config.json",))


def parse_mlx(qc: dict[str, Any], _hf: Any, where: str, dtype: str, key: str) -> CheckpointQuant:
    bits = get_int(qc, "bits", where, lo=2, hi=8)
    group = req_group_size(qc, "group_size", where)
    w = QArgs(num_bits=bits, type="int", strategy="channel" if group == -1 else "group",
              group_size=None if group == -1 else group, symmetric=False, scale_dtype=dtype)
    g = make_group("mlx", ("Linear",), w, None, scale_format=dtype, scope="all_linears", fmt="mlx", layout="mlx",
                   where=where, notes=("affine: a 16-bit scale and a 16-bit bias per group",))
    return CheckpointQuant(quant_method="mlx", family="mlx", found_in=where, format="mlx", producer="mlx-lm",
                           groups=(g,), ignore_style="substring", quantize_lm_head=True,
                           details={"bits": bits, "group_size": group},
                           warnings=("an MLX (Apple) checkpoint without quant_method: SGLang reads it only on MPS "
                                     "(mlx_q4 / mlx_q8); vLLM does not read it",))


def gguf_files_checkpoint(files: list[str], path_kind: str, path: str) -> CheckpointQuant:
    """A checkpoint whose weights are .gguf files (llama.cpp), found beside or instead of config.json.

    ``path_kind`` is ``file`` (the model path is one .gguf file) or ``folder`` (a folder holding them).
    The tensor types live in each file's header; the quantization type is read from the file name
    (llama.cpp's ``-Q4_K_M.gguf`` convention) when it carries one."""
    import re

    types = sorted({m.group(1).upper() for f in files
                    if (m := re.search(r"[-_.]((?:I?Q|IQ)\d[\w]*?|F16|BF16|F32)(?:-\d+-of-\d+)?\.gguf$", f, re.I))})
    g = QuantGroup(name="gguf", targets=("all tensors",), scope="unknown", format="gguf",
                   notes=("GGUF stores a type per tensor (Q4_K, Q6_K, ...) inside the .gguf file",))
    shown = files[0] if len(files) == 1 else f"{len(files)} .gguf files"
    return CheckpointQuant(
        quant_method="gguf", family="gguf", found_in=shown, format="gguf", groups=(g,),
        producer="llama.cpp GGUF" + (f" {', '.join(types)}" if types else ""),
        details={"files": files, "path_kind": path_kind, "path": path, "quant_type": ", ".join(types) or None},
        warnings=("the weights are GGUF files: per-tensor quantization types live in the .gguf headers, so the size "
                  "on disk is not predicted from config.json",),
    )
