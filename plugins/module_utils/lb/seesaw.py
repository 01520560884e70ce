# -*- coding: utf-8 -*-
# Copyright (c) 2026, k8snet.triage contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

"""The Seesaw load-balancer pair (bundled with older Google Distributed Cloud versions), judged from what it says
on the wire: pure checks over one ``packet_capture`` result (protocol ``arp_vrrp``) per load-balancer node.

What Seesaw does (github.com/google/seesaw): ``seesaw_ha`` elects the master of the pair with VRRP v3
advertisements (IP protocol 112, to 224.0.0.18, virtual router id 60 by default, ha/net.go and
engine/config/engine.go); the master's engine sends a gratuitous ARP reply for every VIP it serves every
``garp_interval_sec`` (10 s by default, engine/core.go gratuitousARP, only while it is the leader), from the
load-balancing interface whose MAC is the VRRP virtual MAC 00:00:5e:00:01:<VRID> when ``UseVMAC`` is on (the
default, ncc/lb.go), to the broadcast address.  So: exactly one node sends advertisements (none: no master; two:
split brain), its peer hears them (else it will take over too), and the master's gratuitous ARPs name the VIPs it
holds, at their cadence.  Seesaw forwards with IPVS; the GDC runbook's path through it keeps the VIP as the
destination up to the backend, so a missing address translation after it is not a fault of its hop.
"""

from __future__ import annotations

from ansible_collections.k8snet.triage.plugins.module_utils.core.findings import finding, sample

DEFAULT_VRID = 60
DEFAULT_GARP_INTERVAL = 10.0
TOLERANCE = 1.5  # a gap longer than this many intervals is a missed announcement
VMAC_PREFIX = "00:00:5e:00:01:"


def vmac(vrid):
    return "%s%02x" % (VMAC_PREFIX, vrid)


def _adverts(capture, vrid, direction):
    return [v for v in ((capture or {}).get("announcements") or {}).get("vrrp") or []
            if v.get("vrid") == vrid and v.get("direction") == direction]


def _garps(capture, direction):
    # an entry without an address announces no VIP: it is left out, neither late nor on time
    return [g for g in ((capture or {}).get("announcements") or {}).get("gratuitous_arp") or []
            if g.get("direction") == direction and g.get("address")]


def _window(capture):
    return float((capture or {}).get("seconds") or 0.0)


def _not_captured(missing):
    """``seesaw.not_checked`` for every host without a capture."""
    return [finding(
        "seesaw.not_checked", "warning", "L2", host,
        "no capture from %s: what it says of the Seesaw pair was not read" % host, {},
        "run the seesaw role on it (become, tcpdump on the node)") for host in missing]


def _no_master(subject, vrid, window, heard, evidence):
    """``seesaw.no_master``: no node captured sends advertisements (naming the strangers heard, if any)."""
    strangers = sorted(set(a.get("src") for ads in heard.values() for a in ads))
    heard_text = (" (advertisements from %s, not one of the nodes checked, were heard)" % ", ".join(strangers)
                  if strangers else "")
    return finding(
        "seesaw.no_master", "critical", "L2", subject,
        "no load-balancer node sent a VRRP advertisement for VRID %d in %gs%s: the pair has no master, so no node "
        "holds or announces the VIPs" % (vrid, window, heard_text),
        dict(evidence, heard_from=strangers),
        "check seesaw_ha and seesaw_engine on both nodes (systemctl status seesaw_watchdog, the logs under "
        "/var/log/seesaw) and that VRRP (IP protocol 112 to 224.0.0.18) passes between them")


def _split_brain(subject, vrid, masters, evidence):
    """``seesaw.split_brain``: several nodes send advertisements."""
    return finding(
        "seesaw.split_brain", "critical", "L2", subject,
        "%s all send VRRP advertisements for VRID %d: each thinks it is the master, both answer for the VIPs and "
        "clients flip between them" % (" and ".join(sorted(masters)), vrid), evidence,
        "VRRP does not pass between them (a firewall or a VLAN between the pair drops IP protocol 112 to "
        "224.0.0.18): restore it, then stop seesaw_ha on the node that should be the backup until it hears the "
        "master")


def _peers_not_hearing(master, deaf, window, evidence):
    """``seesaw.peer_not_hearing``: the peers ``deaf`` hear no advertisement from the master."""
    return finding(
        "seesaw.peer_not_hearing", "critical", "L2", ", ".join(deaf),
        "%s hear%s no VRRP advertisement from the master %s in %gs: %s will take over as well (split brain) or "
        "cannot take over when the master fails" % (
            ", ".join(deaf), "s" if len(deaf) == 1 else "", master, window, "it" if len(deaf) == 1 else "they"),
        dict(evidence, deaf=deaf),
        "VRRP multicast (IP protocol 112 to 224.0.0.18) is lost between the nodes: check the switch and any "
        "firewall between them (tcpdump -ni any 'ip proto 112' on both)")


def _garp_findings(master, garps, window, garp_interval, evidence):
    """The findings on the master's gratuitous ARPs: none sent (or the capture too short to tell), or late."""
    if not garps:
        if window >= TOLERANCE * garp_interval:
            return [finding(
                "seesaw.garp_missing", "warning", "L2", master,
                "the master %s sent no gratuitous ARP in %gs (Seesaw sends one per VIP every %gs): after a failover "
                "the router and the clients keep the old node's MAC for the VIPs" % (master, window, garp_interval),
                evidence,
                "check seesaw_engine on %s (its log says 'Starting gratuitous ARPs every ...' when it leads) and "
                "garp_interval_sec in /etc/seesaw/seesaw.cfg" % master)]
        return [finding(
            "seesaw.garp_not_checked", "info", "L2", master,
            "the capture (%gs) is shorter than %g gratuitous ARP intervals (%gs): their cadence was not checked"
            % (window, TOLERANCE, garp_interval), evidence,
            "capture for at least %gs (seesaw_window)" % (TOLERANCE * garp_interval))]
    late = [g for g in garps if (g.get("max_gap") or 0) > TOLERANCE * garp_interval]
    if not late:
        return []
    return [finding(
        "seesaw.garp_irregular", "warning", "L2", master,
        "the master %s announces %s late: a gap of %gs between gratuitous ARPs, more than %g x %gs" % (
            master, ", ".join(g["address"] for g in late), max(g["max_gap"] for g in late), TOLERANCE,
            garp_interval), evidence,
        "a busy or stalled seesaw_engine on %s (its log), or garp_interval_sec changed in "
        "/etc/seesaw/seesaw.cfg" % master)]


def _expected_findings(master, vips, expected, window, garp_interval, evidence):
    """``seesaw.vip_not_announced``: VIPs the master should announce (the LoadBalancer Services', or a list
    given) that none of its gratuitous ARPs named in a window long enough to hear each one."""
    missing = [vip for vip in expected["vips"] if vip not in vips]
    evidence.update(expected=sample(expected["vips"], 20), expected_from=expected["source"],
                    not_announced=sample(missing, 20))
    if not missing or window < TOLERANCE * garp_interval:
        return []
    return [finding(
        "seesaw.vip_not_announced", "critical", "L2", master,
        "the master %s announces %s by gratuitous ARP but not %s (%s) in %gs: no node answers for %s, so clients "
        "and the router keep an old MAC or none" % (
            master, ", ".join(sample(vips, 5)) or "no VIP", ", ".join(sample(missing, 5)), expected["source"], window,
            "it" if len(missing) == 1 else "them"),
        evidence,
        "check that %s is configured on the Seesaw pair (seesaw_engine's log on %s: the vserver of %s, its "
        "healthchecks; /etc/seesaw/cluster.pb or the bundled LB's config) and that its Service's backends are "
        "healthy" % (", ".join(sample(missing, 3)), master, ", ".join(sample(missing, 3))))]


def _pair_ok(subject, vrid, master, ad, captured, vips, macs, garps, evidence):
    """``seesaw.pair``: the master, who hears it, and the VIPs it announces."""
    mac_text = (" from the VRRP virtual MAC %s" % vmac(vrid)) if macs == [vmac(vrid)] else (
        " from %s" % ", ".join(macs) if macs else "")
    return finding(
        "seesaw.pair", "ok", "L2", subject,
        "%s is the Seesaw master (VRID %d, priority %s, advertising every %ss)%s%s" % (
            master, vrid, ad.get("priority"), ad.get("interval"),
            "; %s hear%s it" % (", ".join(h for h in sorted(captured) if h != master),
                                "s" if len(captured) == 2 else "") if len(captured) > 1 else
            "; its peer was not captured",
            "; it announces %s by gratuitous ARP every %ss%s" % (", ".join(vips[:5]), garps[0].get("mean_gap"),
                                                                 mac_text) if garps else ""),
        evidence)


def _garp_evidence(garps, vrid):
    """(the VIPs the master's gratuitous ARPs name, their MACs, the evidence on them)."""
    vips = sorted(set(g.get("address") for g in garps if g.get("address")))
    macs = sorted(set(g.get("mac") for g in garps if g.get("mac")))
    return vips, macs, dict(
        vips=sample(vips), macs=macs, vmac=vmac(vrid),
        garp=[dict((k, g.get(k)) for k in ("address", "mac", "interface", "packets", "mean_gap", "max_gap"))
              for g in garps][:20])


def _master_findings(found, subject, vrid, garp_interval, captured, heard, window, masters, evidence,
                     expected=None):
    """Adds to ``found`` (the findings so far, whose warnings hold the ok one back) the findings on a pair with
    one master: its peers not hearing it, its gratuitous ARPs, the expected VIPs it does not announce, else
    ``seesaw.pair``; returns (``found``, the VIPs its gratuitous ARPs name)."""
    master, ads = next(iter(masters.items()))
    ad = max(ads, key=lambda a: a.get("packets") or 0)
    evidence.update(master=master, priority=ad.get("priority"), advertised_interval=ad.get("interval"),
                    observed_gap=ad.get("mean_gap"))
    deaf = sorted(h for h in captured if h != master and not heard.get(h))
    if deaf:
        found.append(_peers_not_hearing(master, deaf, window, evidence))
    garps = _garps(captured[master], "out")
    vips, macs, garp_evidence = _garp_evidence(garps, vrid)
    evidence.update(garp_evidence)
    found.extend(_garp_findings(master, garps, window, garp_interval, evidence))
    if expected and expected.get("vips"):
        found.extend(_expected_findings(master, vips, expected, window, garp_interval, evidence))
    if not [f for f in found if f["severity"] in ("warning", "critical")]:
        found.append(_pair_ok(subject, vrid, master, ad, captured, vips, macs, garps, evidence))
    return found, vips


def pair_check(captures, vrid=DEFAULT_VRID, garp_interval=DEFAULT_GARP_INTERVAL, expected=None):
    """Findings on the pair from ``{host: packet_capture result}`` (None for a host not captured)."""
    return pair_view(captures, vrid, garp_interval, expected)["findings"]


def pair_view(captures, vrid=DEFAULT_VRID, garp_interval=DEFAULT_GARP_INTERVAL, expected=None):
    """The pair from ``{host: packet_capture result}`` (None for a host not captured): ``{master, announced,
    findings}``, the one master (None with none or two) and the VIPs its gratuitous ARPs name.  ``expected``:
    ``{vips, source}``, the VIPs the master should announce (``seesaw.vip_not_announced`` for those it does not)."""
    subject = "seesaw VRID %d" % vrid
    missing = sorted(h for h, c in captures.items() if not isinstance(c, dict) or c.get("failed"))
    captured = dict((h, c) for h, c in captures.items() if h not in missing)
    found = _not_captured(missing)
    out = {"master": None, "announced": [], "findings": found}
    if not captured:
        return out
    masters = dict((h, _adverts(c, vrid, "out")) for h, c in captured.items() if _adverts(c, vrid, "out"))
    heard = dict((h, _adverts(c, vrid, "in")) for h, c in captured.items())
    window = min(_window(c) for c in captured.values())
    evidence = {"nodes": sorted(captured), "window": window, "vrid": vrid,
                "advertisers": dict((h, [a.get("src") for a in ads]) for h, ads in masters.items())}
    if not masters:
        out["findings"] = found + [_no_master(subject, vrid, window, heard, evidence)]
    elif len(masters) > 1:
        out["findings"] = found + [_split_brain(subject, vrid, masters, evidence)]
    else:
        out["findings"], out["announced"] = _master_findings(found, subject, vrid, garp_interval, captured, heard,
                                                             window, masters, evidence, expected)
        out["master"] = next(iter(masters))
    return out
