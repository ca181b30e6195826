"""Engine arguments from the artifacts a deployment repo commits.

Finds ``vllm serve MODEL ...``, ``python -m vllm.entrypoints.openai.api_server --model ...``,
``python -m sglang.launch_server --model-path ...`` and ``sglang serve ...`` in shell scripts,
Dockerfiles, Kubernetes manifests, Helm values, docker-compose files and any other YAML string that
holds an engine command. Each hit is an :class:`~.invocation.EngineInvocation` with the file and line
of the command (the line of its first token) and of every flag, the flags in
:mod:`quantadvise.engines.flags` typed, the GPUs the container is given, the engine version from the
image tag or a pinned ``pip install``, every other flag kept in ``other``, and warnings for what does
not hold at run time (a flag given twice, a value the engine would refuse ...).

- ``invocation``  the result models: EngineInvocation, DeploymentScan
- ``shell``       a POSIX-shell lexer: words with lines, ``$VAR`` / ``${VAR:-default}`` expanded
- ``launch``      which command launches an engine, and its flags read (shell scripts: parse_shell)
- ``dockerfile``  the final stage's ENTRYPOINT + CMD
- ``manifests``   Kubernetes, Helm values, compose, other YAML
- ``programs``    Makefiles and Python launchers
- ``budget``      one file's allowance on hostile input (expansion, words, seconds)
- ``walk``        the bounded walk of a folder
- ``scan``        which files, which reader: classify, parse_text, read_paths (the only file reads)
"""
