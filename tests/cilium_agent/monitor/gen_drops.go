// Generates drops.gob: the byte stream the Cilium agent writes to a client of its monitor socket
// (monitor1_2.sock, the v1.2 listener protocol), made by Go's own encoding/gob exactly as the agent's
// listener makes it (one gob.Encoder per connection, one Encode per payload), and drops.json: what
// each payload holds, for the tests to compare a reader with; and drops.jsonl: the lines
// `cilium-dbg monitor --type drop -j` prints for the same drops (what the agent's CLI gives through the
// API's exec), marshalled by Go's encoding/json from structs with the json tags of Cilium's
// pkg/monitor/datapath_drop.go (DropNotifyVerbose) and pkg/monitor/dissect.go (DissectSummary, Flow);
// the ports and addresses as gopacket's endpoint formatters write them (decimal ports, net.IP.String()).
//
// The Payload struct has the field names and types of Cilium's pkg/monitor/payload.Payload (gob matches
// fields by name); the drop notification is laid out as pkg/monitor/datapath_drop.go's DropNotify
// (version 2: a 40-byte header, native little-endian byte order) followed by the captured packet.
//
// Regenerate with: go run gen_drops.go  (in this directory; Go 1.19 or later, no modules needed)
package main

import (
	"encoding/binary"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
)

// The json shape of pkg/monitor/dissect.go's Flow and DissectSummary (each layer string shortened to its layer's
// name: gopacket's LayerString dumps, of which a reader here reads only which layers are there).
type Flow struct {
	Src string `json:"src"`
	Dst string `json:"dst"`
}

type DissectSummary struct {
	Ethernet string `json:"ethernet,omitempty"`
	IPv4     string `json:"ipv4,omitempty"`
	IPv6     string `json:"ipv6,omitempty"`
	TCP      string `json:"tcp,omitempty"`
	UDP      string `json:"udp,omitempty"`
	SCTP     string `json:"sctp,omitempty"`
	ICMPv4   string `json:"icmpv4,omitempty"`
	ICMPv6   string `json:"icmpv6,omitempty"`
	L2       *Flow  `json:"l2,omitempty"`
	L3       *Flow  `json:"l3,omitempty"`
	L4       *Flow  `json:"l4,omitempty"`
}

// The json shape of pkg/monitor/datapath_drop.go's DropNotifyVerbose.
type DropNotifyVerbose struct {
	CPUPrefix string `json:"cpu,omitempty"`
	Type      string `json:"type,omitempty"`
	Mark      string `json:"mark,omitempty"`
	Reason    string `json:"reason,omitempty"`

	Source   uint16 `json:"source"`
	Bytes    uint32 `json:"bytes"`
	SrcLabel uint32 `json:"srcLabel"`
	DstLabel uint32 `json:"dstLabel"`
	DstID    uint32 `json:"dstID"`
	Line     uint16 `json:"Line"`
	File     uint8  `json:"File"`
	ExtError int8   `json:"ExtError"`
	Ifindex  uint32 `json:"Ifindex"`

	Summary *DissectSummary `json:"summary,omitempty"`
}

// pkg/monitor/api/drop.go's texts of the reasons used here
var reasons = map[uint8]string{133: "Policy denied", 158: "Service backend not found", 181: "Policy denied by denylist"}

type Payload struct {
	Data []byte
	CPU  int
	Lost uint64
	Type int
}

const (
	eventSample = 9 // payload.EventSample (PERF_RECORD_SAMPLE)
	recordLost  = 2 // payload.RecordLost (PERF_RECORD_LOST)
	notifyDrop  = 1 // CILIUM_NOTIFY_DROP
	notifyTrace = 4 // CILIUM_NOTIFY_TRACE
)

type flow struct {
	Reason   uint8  `json:"reason"`
	Source   uint16 `json:"source"`
	DstID    uint32 `json:"dst_id"`
	SrcLabel uint32 `json:"src_identity"`
	DstLabel uint32 `json:"dst_identity"`
	Ifindex  uint32 `json:"ifindex"`
	Src      string `json:"src"`
	Dst      string `json:"dst"`
	Proto    string `json:"proto"`
	Sport    uint16 `json:"sport"`
	Dport    uint16 `json:"dport"`
	Count    int    `json:"count"`
	IPv6     bool   `json:"ipv6"`
}

func packet(f flow) []byte {
	eth := make([]byte, 14)
	copy(eth[0:6], []byte{0x02, 0, 0, 0, 0, 0x02})
	copy(eth[6:12], []byte{0x02, 0, 0, 0, 0, 0x01})
	var l4 []byte
	proto := byte(6)
	if f.Proto == "udp" {
		proto = 17
		l4 = make([]byte, 8)
		binary.BigEndian.PutUint16(l4[4:6], 8)
	} else {
		l4 = make([]byte, 20)
		l4[12] = 5 << 4
		l4[13] = 0x02 // SYN
	}
	binary.BigEndian.PutUint16(l4[0:2], f.Sport)
	binary.BigEndian.PutUint16(l4[2:4], f.Dport)
	if f.IPv6 {
		binary.BigEndian.PutUint16(eth[12:14], 0x86dd)
		ip := make([]byte, 40)
		ip[0] = 6 << 4
		binary.BigEndian.PutUint16(ip[4:6], uint16(len(l4)))
		ip[6] = proto
		ip[7] = 64
		copy(ip[8:24], net.ParseIP(f.Src).To16())
		copy(ip[24:40], net.ParseIP(f.Dst).To16())
		return append(append(eth, ip...), l4...)
	}
	binary.BigEndian.PutUint16(eth[12:14], 0x0800)
	ip := make([]byte, 20)
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:4], uint16(20+len(l4)))
	ip[8] = 64
	ip[9] = proto
	copy(ip[12:16], net.ParseIP(f.Src).To4())
	copy(ip[16:20], net.ParseIP(f.Dst).To4())
	return append(append(eth, ip...), l4...)
}

func drop(f flow) []byte {
	pkt := packet(f)
	h := make([]byte, 40)
	le := binary.LittleEndian
	h[0] = notifyDrop
	h[1] = f.Reason
	le.PutUint16(h[2:4], f.Source)
	le.PutUint32(h[4:8], 0)
	le.PutUint32(h[8:12], uint32(len(pkt)))
	le.PutUint16(h[12:14], uint16(len(pkt)))
	le.PutUint16(h[14:16], 2) // DropNotifyVersion2
	le.PutUint32(h[16:20], f.SrcLabel)
	le.PutUint32(h[20:24], f.DstLabel)
	le.PutUint32(h[24:28], f.DstID)
	le.PutUint16(h[28:30], 1452)
	h[30] = 2 // bpf_lxc.c
	h[31] = 0
	le.PutUint32(h[32:36], f.Ifindex)
	if f.IPv6 {
		h[36] = 1 // DropNotifyFlagIsIPv6
	}
	return append(h, pkt...)
}

func main() {
	flows := []flow{
		{Reason: 133, Source: 1201, DstID: 0, SrcLabel: 48213, DstLabel: 2, Ifindex: 12, Src: "198.19.1.10",
			Dst: "198.19.2.20", Proto: "tcp", Sport: 41000, Dport: 8080, Count: 5},
		{Reason: 158, Source: 1202, DstID: 0, SrcLabel: 48214, DstLabel: 2, Ifindex: 13, Src: "198.19.1.11",
			Dst: "198.18.96.10", Proto: "udp", Sport: 53000, Dport: 53, Count: 3},
		{Reason: 181, Source: 1201, DstID: 0, SrcLabel: 48213, DstLabel: 16777217, Ifindex: 12, Src: "2001:db8:1::10",
			Dst: "2001:db8:2::20", Proto: "tcp", Sport: 42000, Dport: 443, Count: 1, IPv6: true},
	}
	lines, err := os.Create("drops.jsonl")
	if err != nil {
		panic(err)
	}
	defer lines.Close()
	out, err := os.Create("drops.gob")
	if err != nil {
		panic(err)
	}
	defer out.Close()
	enc := gob.NewEncoder(out)
	for _, f := range flows {
		for i := 0; i < f.Count; i++ {
			if err := enc.Encode(&Payload{Data: drop(f), CPU: i % 2, Type: eventSample}); err != nil {
				panic(err)
			}
			line, err := json.Marshal(verbose(f, i%2))
			if err != nil {
				panic(err)
			}
			fmt.Fprintln(lines, string(line))
		}
	}
	// a trace notification (not a drop) and a lost-records notice, as the perf reader reports them
	trace := make([]byte, 48)
	trace[0] = notifyTrace
	if err := enc.Encode(&Payload{Data: trace, CPU: 1, Type: eventSample}); err != nil {
		panic(err)
	}
	if err := enc.Encode(&Payload{CPU: 0, Lost: 7, Type: recordLost}); err != nil {
		panic(err)
	}
	expected, err := json.MarshalIndent(map[string]interface{}{"flows": flows, "lost": 7, "other": 1}, "", "  ")
	if err != nil {
		panic(err)
	}
	if err := os.WriteFile("drops.json", append(expected, '\n'), 0o644); err != nil {
		panic(err)
	}
}

func verbose(f flow, cpu int) DropNotifyVerbose {
	pkt := packet(f)
	summary := &DissectSummary{
		Ethernet: "Ethernet",
		L2:       &Flow{Src: "02:00:00:00:00:01", Dst: "02:00:00:00:00:02"},
		L3:       &Flow{Src: net.ParseIP(f.Src).String(), Dst: net.ParseIP(f.Dst).String()},
		L4:       &Flow{Src: strconv.Itoa(int(f.Sport)), Dst: strconv.Itoa(int(f.Dport))},
	}
	if f.IPv6 {
		summary.IPv6 = "IPv6"
	} else {
		summary.IPv4 = "IPv4"
	}
	if f.Proto == "udp" {
		summary.UDP = "UDP"
	} else {
		summary.TCP = "TCP"
	}
	return DropNotifyVerbose{
		CPUPrefix: fmt.Sprintf("CPU %02d:", cpu), Type: "drop", Mark: fmt.Sprintf("%#x", 0),
		Reason: reasons[f.Reason], Source: f.Source, Bytes: uint32(len(pkt)), SrcLabel: f.SrcLabel,
		DstLabel: f.DstLabel, DstID: f.DstID, Line: 1452, File: 2, Ifindex: f.Ifindex, Summary: summary,
	}
}
