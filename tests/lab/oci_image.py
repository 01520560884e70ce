"""OCI image tarballs for the lab's container runtime, made here: no registry is reachable from the lab.

An image is one uncompressed layer (a tar of the files given), its config and its manifest, in the OCI image
layout (https://github.com/opencontainers/image-spec/blob/main/image-layout.md: ``oci-layout``, ``index.json``,
``blobs/sha256/...``) as ``ctr images import`` reads it; the index names the image by the annotation containerd
reads on import (``io.containerd.image.name``). Every tar entry is owned by root with mtime 0, so the same files
give the same digests.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

LAYER = "application/vnd.oci.image.layer.v1.tar"
CONFIG = "application/vnd.oci.image.config.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"


def _info(name, kind, mode, size=0, target=""):
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.size, info.linkname = kind, mode, size, target
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    info.mtime = 0
    return info


def layer(files, symlinks=None, dirs=()):
    """An uncompressed layer: ``files`` maps a path in the image to (bytes or a host path, mode); ``symlinks`` maps a
    path to its target; ``dirs`` are empty directories."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        made = set()

        def parents(path):
            parts = path.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                d = "/".join(parts[:i])
                if d and d not in made:
                    made.add(d)
                    tar.addfile(_info(d, tarfile.DIRTYPE, 0o755))

        for d in sorted(dirs):
            parents(d.strip("/") + "/x")
        for path, (content, mode) in sorted(files.items()):
            path = path.strip("/")
            data = content if isinstance(content, bytes) else Path(content).read_bytes()
            parents(path)
            tar.addfile(_info(path, tarfile.REGTYPE, mode, len(data)), io.BytesIO(data))
        for path, target in sorted((symlinks or {}).items()):
            path = path.strip("/")
            parents(path)
            tar.addfile(_info(path, tarfile.SYMTYPE, 0o777, target=target))
    return out.getvalue()


def _blob(blobs, data):
    digest = hashlib.sha256(data).hexdigest()
    blobs[digest] = data
    return "sha256:" + digest


def write_image(dest, name, layer_tar, entrypoint=None, cmd=None, env=None):
    """Write the image ``name`` (``registry/repo:tag``) with one layer as an OCI layout tarball at ``dest``."""
    if ":" not in name.rsplit("/", 1)[-1]:
        raise ValueError(f"image name {name!r} has no tag: give one (a pod's image with :latest is always pulled)")
    blobs = {}
    layer_digest = _blob(blobs, layer_tar)
    config = {"architecture": "amd64", "os": "linux",
              "config": {"Entrypoint": entrypoint, "Cmd": cmd, "Env": env or ["PATH=/bin:/usr/bin:/sbin:/usr/sbin"]},
              "rootfs": {"type": "layers", "diff_ids": [layer_digest]}}
    config_bytes = json.dumps(config, sort_keys=True).encode()
    manifest = {"schemaVersion": 2, "mediaType": MANIFEST,
                "config": {"mediaType": CONFIG, "digest": _blob(blobs, config_bytes), "size": len(config_bytes)},
                "layers": [{"mediaType": LAYER, "digest": layer_digest, "size": len(layer_tar)}]}
    manifest_bytes = json.dumps(manifest, sort_keys=True).encode()
    index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
             "manifests": [{"mediaType": MANIFEST, "digest": _blob(blobs, manifest_bytes), "size": len(manifest_bytes),
                            "platform": {"architecture": "amd64", "os": "linux"},
                            "annotations": {"io.containerd.image.name": name,
                                            "org.opencontainers.image.ref.name": name.rsplit(":", 1)[1]}}]}
    entries = {"oci-layout": json.dumps({"imageLayoutVersion": "1.0.0"}).encode(),
               "index.json": json.dumps(index, sort_keys=True).encode()}
    entries.update({f"blobs/sha256/{d}": data for d, data in blobs.items()})
    with tarfile.open(dest, "w") as tar:
        for d in ("blobs", "blobs/sha256"):
            tar.addfile(_info(d, tarfile.DIRTYPE, 0o755))
        for path, data in entries.items():
            tar.addfile(_info(path, tarfile.REGTYPE, 0o644, len(data)), io.BytesIO(data))
    return dest
