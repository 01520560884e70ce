"""Throw-away certificate authorities and certificates: the stand-in API's server certificate (kubectl sends
bearer tokens only over TLS) and the lab cluster's PKI (tests/lab/cluster.py: the API server's serving
certificate, the components' and users' client certificates).  Made with ``cryptography``, which ansible-core
already requires."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def _key():
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


class CA:
    """A throw-away certificate authority: ``issue`` signs server and client certificates."""

    def __init__(self, name="k8snet-lab-ca", days=2):
        self.now = datetime.datetime.now(datetime.timezone.utc)
        self.key = _key()
        self.name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        self.cert = (x509.CertificateBuilder().subject_name(self.name).issuer_name(self.name)
                     .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
                     .not_valid_before(self.now - datetime.timedelta(minutes=5))
                     .not_valid_after(self.now + datetime.timedelta(days=days))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                     .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                  content_commitment=False, key_encipherment=False,
                                                  data_encipherment=False, key_agreement=False, encipher_only=False,
                                                  decipher_only=False), critical=True)
                     .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False)
                     .sign(self.key, hashes.SHA256()))

    @property
    def pem(self):
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def issue(self, common_name, names=(), addresses=(), organizations=(), client=False, days=1):
        """A certificate for ``common_name`` (a server's, with its DNS names and addresses, or with ``client`` a
        client's, whose organizations are its groups as the API server reads them); returns (cert PEM, key PEM)."""
        key = _key()
        subject = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
        subject.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
        usage = x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH if client else x509.oid.ExtendedKeyUsageOID.SERVER_AUTH
        builder = (x509.CertificateBuilder().subject_name(x509.Name(subject)).issuer_name(self.name)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(self.now - datetime.timedelta(minutes=5))
                   .not_valid_after(self.now + datetime.timedelta(days=days))
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
                                  critical=False))
        alt = [x509.DNSName(n) for n in names] + [x509.IPAddress(ipaddress.ip_address(a)) for a in addresses]
        if alt:
            builder = builder.add_extension(x509.SubjectAlternativeName(alt), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)


def write_private(path, data):
    """Write a key readable by its owner alone."""
    path = Path(path)
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_bytes(data)
    return path


def make_ca_and_server(directory, addresses, names=("kubernetes", "kubernetes.default.svc")):
    """Write ca.crt, server.crt, server.key under ``directory``; return their paths."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    ca = CA()
    cert, key = ca.issue("kube-apiserver", names=names, addresses=addresses)
    paths = {"ca": directory / "ca.crt", "cert": directory / "server.crt", "key": directory / "server.key"}
    paths["ca"].write_bytes(ca.pem)
    paths["cert"].write_bytes(cert)
    write_private(paths["key"], key)
    return paths
