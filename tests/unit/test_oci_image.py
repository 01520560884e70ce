"""tests/lab/oci_image.py lays out the lab's images as the OCI image layout specifies them
(https://github.com/opencontainers/image-spec/blob/main/image-layout.md, manifest.md, config.md): every blob under
the digest of its bytes, the index naming the manifest, the manifest its config and layer, the config the layer's
diff_id; containerd reads the image's name from the index's io.containerd.image.name annotation. Read back here with
tarfile and hashlib, not with the module's own code."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile

import pytest

from tests.lab.oci_image import layer, write_image


def blobs_of(path):
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def test_every_blob_is_named_by_its_digest_and_the_chain_holds(tmp_path):
    data = layer({"bin/tool": (b"#!/bin/sh\necho hi\n", 0o755)}, symlinks={"bin/alias": "/bin/tool"}, dirs=("tmp",))
    path = write_image(tmp_path / "image.tar", "lab.k8snet/tool:1", data, entrypoint=["/bin/tool"])
    files = blobs_of(path)
    assert json.loads(files["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    for name, content in files.items():
        if name.startswith("blobs/sha256/"):
            assert name.rsplit("/", 1)[1] == hashlib.sha256(content).hexdigest()
    [entry] = json.loads(files["index.json"])["manifests"]
    assert entry["annotations"]["io.containerd.image.name"] == "lab.k8snet/tool:1"
    assert entry["annotations"]["org.opencontainers.image.ref.name"] == "1"
    manifest = json.loads(files["blobs/sha256/" + entry["digest"].split(":")[1]])
    assert entry["size"] == len(files["blobs/sha256/" + entry["digest"].split(":")[1]])
    config = json.loads(files["blobs/sha256/" + manifest["config"]["digest"].split(":")[1]])
    [layer_desc] = manifest["layers"]
    assert config["rootfs"]["diff_ids"] == [layer_desc["digest"]]  # uncompressed: the layer is its own diff
    assert config["config"]["Entrypoint"] == ["/bin/tool"] and config["os"] == "linux"
    with tarfile.open(fileobj=io.BytesIO(files["blobs/sha256/" + layer_desc["digest"].split(":")[1]])) as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert members["bin/tool"].mode == 0o755 and members["bin/tool"].uid == 0 and members["bin/tool"].mtime == 0
        assert members["bin/alias"].issym() and members["bin/alias"].linkname == "/bin/tool"
        assert members["bin"].isdir() and members["tmp"].isdir()
        assert tar.extractfile("bin/tool").read() == b"#!/bin/sh\necho hi\n"


def test_the_same_files_give_the_same_digests(tmp_path):
    one = write_image(tmp_path / "a.tar", "lab.k8snet/x:1", layer({"f": (b"x", 0o644)}))
    two = write_image(tmp_path / "b.tar", "lab.k8snet/x:1", layer({"f": (b"x", 0o644)}))
    assert one.read_bytes() == two.read_bytes()


def test_a_name_without_a_tag_is_refused():
    with pytest.raises(ValueError, match="has no tag"):
        write_image("/nonexistent/x.tar", "lab.k8snet/x", layer({}))
