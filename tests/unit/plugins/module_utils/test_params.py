# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""params: the shared option rules (issue 11's hostile input)."""

from __future__ import annotations

import pytest

from ansible_collections.k8snet.triage.plugins.module_utils.core import params as p
from ansible_collections.k8snet.triage.plugins.module_utils.core.errors import InputError


@pytest.mark.parametrize("value, message", [
    (float("nan"), "probe_timeout=nan is invalid: give a number from 0.01 to 10 seconds (NaN and infinity"),
    (float("inf"), "probe_timeout=inf is invalid"),
    (1e9, "probe_timeout=1000000000.0 is invalid: give a number from 0.01 to 10 seconds"),
    (-1, "probe_timeout=-1 is invalid"),
    (True, "(got a boolean)"),
    ("1", "(got text)"),
])
def test_seconds_are_finite_and_capped(value, message):
    with pytest.raises(InputError) as exc:
        p.validate({"probe_timeout": value}, {"probe_timeout": p.seconds(0.01, 10)})
    assert message in exc.value.message and exc.value.details["option"] == "probe_timeout"


def test_counts_are_integers_within_caps():
    rule = p.count(0, 1024, "entries")
    assert rule("max_flush", 0) == 0 and rule("max_flush", 32.0) == 32
    for bad in (-1, 2 ** 64, 0.5, float("nan")):
        with pytest.raises(InputError, match="max_flush=.* is invalid: give an integer from 0 to 1024 entries"):
            rule("max_flush", bad)
    with pytest.raises(InputError, match="count=100000 is invalid: give an integer from 1 to 20"):
        p.count(1, 20)("count", 100000)


def test_port_zero_is_refused_not_defaulted():
    assert p.port("port", 53) == 53
    with pytest.raises(InputError, match="port=0 is invalid: give an integer from 1 to 65535; 0 is not a port"):
        p.port("port", 0)
    with pytest.raises(InputError, match="port=65536"):
        p.port("port", 65536)


def test_dns_names():
    assert p.dns_name("names[0]", "kubernetes.default.svc.cluster.local.") == "kubernetes.default.svc.cluster.local."
    assert p.dns_name("n", "_dns._udp.example.com")
    for bad, message in (("a" * 300, "a DNS name has at most 253 characters, this one has 300"),
                         ("x" * 64 + ".com", "label 'xxxx"), ("a..b", "label '' is empty"),
                         ("a b.com", "holds characters other than"), ("a\nb", "control and format characters"),
                         ("", "non-empty string"), (["a"], r"give a string \(got a list\)")):
        with pytest.raises(InputError, match=message):
            p.dns_name("n", bad)


def test_address_families():
    assert p.address(4)("a", " 198.18.0.1") == "198.18.0.1"
    assert p.address()("a", "2001:DB8::1") == "2001:db8::1"
    with pytest.raises(InputError, match="this is an IPv6 address, give an IPv4 address"):
        p.address(4)("a", "2001:db8::1")
    with pytest.raises(InputError, match="this is an IPv4 address, give an IPv6 address"):
        p.address(6)("a", "198.18.0.1")
    with pytest.raises(InputError, match="give an IPv4 or IPv6 address as a string .got an integer"):
        p.address()("a", 5)
    assert p.address_or_network("h", "198.19.0.0/16") == "198.19.0.0/16"


def test_interface_names():
    assert p.interface("i", "lxc1234567890ab") == "lxc1234567890ab"
    assert p.interface("i", "any", allow_any=True) == "any"
    for bad in ("x" * 16, "eth0/../x", "eth0:1", "a b", "..", "ünïcødé\u202ex", "eth0\n"):
        with pytest.raises(InputError, match="i=.* is invalid"):
            p.interface("i", bad)


def test_paths():
    assert p.absolute_path("d", "/etc/cni/net.d") == "/etc/cni/net.d"
    for bad, message in (("etc/cni", "absolute path"), ("/sys/fs/bpf/../../etc", "'..' segments")):
        with pytest.raises(InputError, match=message):
            p.absolute_path("d", bad)
    with pytest.raises(InputError, match="relative to the base directory"):
        p.relative_path("maps[0]", "../../etc/passwd")


def test_lists_check_every_item_and_are_capped():
    rule = p.each(p.address(), max_items=3, non_empty=True, what="give at least one address")
    assert rule("targets", ["198.18.0.1"]) == ["198.18.0.1"]
    with pytest.raises(InputError, match=r"targets\[1\]='x' is invalid"):
        rule("targets", ["198.18.0.1", "x"])
    with pytest.raises(InputError, match="targets=.* the list is empty, so nothing would be checked; give at least"):
        rule("targets", [])
    with pytest.raises(InputError, match="give at most 3 items"):
        rule("targets", ["198.18.0.1"] * 4)
    with pytest.raises(InputError, match=r"targets\[0\].port=0 is invalid"):
        p.each(p.fields(port=p.port))("targets", [{"port": 0}])


class FakeModule(object):
    def __init__(self, **params):
        self.params = params
        self.failed = None

    def fail_json(self, **kwargs):
        self.failed = kwargs
        raise SystemExit(1)


def test_enforce_fails_once_naming_the_option():
    module = FakeModule(max_flush=-1, interface="eth0")
    with pytest.raises(SystemExit):
        p.enforce(module, {"interface": p.interface, "max_flush": p.count(0, 1024)})
    assert module.failed["invalid_option"] == "max_flush"
    assert module.failed["msg"].startswith("max_flush=-1 is invalid: give an integer from 0 to 1024")


# ------------------------------------------------------------------ new_module on real AnsibleModule arguments
SPEC = {"name": {"type": "str"}, "names": {"type": "list", "elements": "str", "default": []},
        "limits": {"type": "dict", "options": {"max_flush": {"type": "int"}}}, "max_flush": {"type": "int", "default": 32}}


def _module(args):
    """new_module over real ansible-core argument handling: (the module, or None) and what it exited with."""
    from ansible.module_utils.basic import AnsibleModule
    from ansible.module_utils.testing import patch_module_args

    class Exited(Exception):
        pass

    class Module(AnsibleModule):
        def fail_json(self, msg, **kwargs):
            raise Exited(dict(kwargs, msg=msg))

    with patch_module_args(args):
        try:
            return p.new_module(Module, {"max_flush": p.count(1, 1000)}, argument_spec=SPEC, supports_check_mode=True), None
        except Exited as exc:
            return None, exc.args[0]


@pytest.mark.parametrize("args, option, words", [
    ({"name": ["kube-system"]}, "name", "name=['kube-system'] is invalid: give a string, not a list (Ansible would "
                                        "have turned it into the text \"['kube-system']\")"),
    ({"names": ["a", {"b": 1}]}, "names[1]", "give a string, not a mapping"),
    ({"limits": 5}, "limits", "limits=5 is invalid: give a dict of its suboptions (got an integer)"),
    ({"max_flush": float("inf")}, "max_flush", "max_flush is infinite: give a finite integer"),
    ({"limits": {"max_flush": float("-inf")}}, "limits.max_flush", "limits.max_flush is infinite"),
    ({"max_flush": 5000}, "max_flush", "max_flush=5000 is invalid"),
])
def test_new_module_refuses_what_ansible_core_would_convert_or_choke_on(args, option, words):
    module, failed = _module(args)
    assert module is None and failed["invalid_option"] == option and words in failed["msg"], failed


def test_new_module_gives_the_converted_arguments():
    module, failed = _module({"name": "kube-system", "names": "a,b", "limits": '{"max_flush": "7"}'})
    assert failed is None
    assert (module.params["name"], module.params["names"], module.params["limits"], module.params["max_flush"]) == (
        "kube-system", ["a", "b"], {"max_flush": 7}, 32)
