#!/usr/bin/env python3
"""Regenerates the synthetic hwloc XML fixtures of this folder (see README.md).

The CPU part of each file comes from hwloc itself (`lstopo -i "<synthetic>" --of xml`); this
script only adds a HostName and the PCI tree (host bridges, PCI-PCI bridges, devices and their
OS devices) in the format hwloc 2.x exports. Run it from anywhere; it needs lstopo-no-graphics.
Afterwards check that `lstopo-no-graphics -i FILE` shows the devices.
"""
import itertools
import os
import subprocess
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
gp = itertools.count(1000)
LINK = "63.015385"  # PCIe Gen5 x16, GB/s, as hwloc reports it


def synthetic(desc):
    xml = subprocess.run(["lstopo-no-graphics", "-i", desc, "--of", "xml"], check=True,
                         capture_output=True, text=True).stdout
    return ET.fromstring(xml.split("?>", 1)[1].split(">", 1)[1])  # drop <?xml?> and DOCTYPE


def info(parent, name, value):
    ET.SubElement(parent, "info", name=name, value=value)


def host_bridge(parent, first, last):
    return ET.SubElement(parent, "object", type="Bridge", gp_index=str(next(gp)), bridge_type="0-1",
                         depth="0", bridge_pci=f"0000:[{first:02x}-{last:02x}]")


def pci_bridge(parent, busid, depth, first, last, ids):
    b = ET.SubElement(parent, "object", type="Bridge", gp_index=str(next(gp)), bridge_type="1-1",
                      depth=str(depth), bridge_pci=f"0000:[{first:02x}-{last:02x}]",
                      pci_busid=f"0000:{busid}", pci_type=f"0604 [{ids}] [0000:0000] 00",
                      pci_link_speed=LINK)
    return b


def pci_dev(parent, busid, pci_type, vendor, device):
    d = ET.SubElement(parent, "object", type="PCIDev", gp_index=str(next(gp)), pci_busid=f"0000:{busid}",
                      pci_type=pci_type, pci_link_speed=LINK)
    info(d, "PCIVendor", vendor)
    if device:
        info(d, "PCIDevice", device)
    return d


def os_dev(parent, name, osdev_type, subtype=None, infos=()):
    attrs = {"type": "OSDev", "gp_index": str(next(gp)), "name": name}
    if subtype:
        attrs["subtype"] = subtype
    attrs["osdev_type"] = str(osdev_type)  # 0 block, 1 gpu, 2 network, 3 openfabrics, 5 coproc
    o = ET.SubElement(parent, "object", attrs)
    for k, v in infos:
        info(o, k, v)
    return o


def gpu(parent, bus, i):
    d = pci_dev(parent, f"{bus:02x}:00.0", "0302 [10de:2330] [10de:16c1] a1", "NVIDIA Corporation",
                "GH100 [H100 SXM5 80GB]")
    model = [("Backend", "CUDA"), ("GPUVendor", "NVIDIA Corporation"), ("GPUModel", "NVIDIA H100 80GB HBM3")]
    if i == 6:    # an NVML device (hwloc osdev type GPU) instead of CUDA
        os_dev(d, f"nvml{i}", 1, "NVML", [("Backend", "NVML")] + model[1:])
    elif i != 7:  # GPU 7: driver not loaded, no OS device; found by its PCI class alone
        os_dev(d, f"cuda{i}", 5, "CUDA", model)


def nic(parent, bus, i):
    d = pci_dev(parent, f"{bus:02x}:00.0", "0207 [15b3:1021] [15b3:0041] 00", "Mellanox Technologies",
                "MT2910 Family [ConnectX-7]")
    os_dev(d, f"mlx5_{i}", 3, "OpenFabrics", [("NodeGUID", f"a088:c203:00{i:02x}:0001"), ("Port1State", "4"),
                                             ("Port1LID", str(i + 1))])
    os_dev(d, f"ibp{bus}s0", 2, None, [("Address", f"00:00:10:49:fe:80:00:00:00:00:00:00:a0:88:c2:03:00:{i:02x}:00:01")])


def switch_pair(hb, rp_busid, first, pair):
    """Root port -> PCIe switch (upstream port) -> two downstream ports -> GPU `pair`, NIC `pair`."""
    rp = pci_bridge(hb, rp_busid, 1, first, first + 3, "8086:352a")
    up = pci_bridge(rp, f"{first:02x}:00.0", 2, first + 1, first + 3, "1000:c030")
    d0 = pci_bridge(up, f"{first + 1:02x}:00.0", 3, first + 2, first + 2, "1000:c030")
    d1 = pci_bridge(up, f"{first + 1:02x}:01.0", 3, first + 3, first + 3, "1000:c030")
    gpu(d0, first + 2, pair)
    nic(d1, first + 3, pair)


def machine_info(root, hostname):
    m = root.find("object")
    pos = [i for i, c in enumerate(m) if c.tag == "info"][-1] + 1
    m.insert(pos, ET.Element("info", name="HostName", value=hostname))
    return m


def write(root, name):
    ET.indent(root, space="  ")
    text = ET.tostring(root, encoding="unicode")
    with open(os.path.join(HERE, name), "w") as f:
        f.write('<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE topology SYSTEM "hwloc2.dtd">\n')
        f.write(text + "\n")


def gpu8():
    """2 packages x 2 NUMA nodes; 8 GPU+NIC pairs, each pair behind its own PCIe switch.
    NUMA 2p: one host bridge with two switches (pairs 4p, 4p+1).
    NUMA 2p+1: two host bridges with one switch each (pairs 4p+2, 4p+3)."""
    root = synthetic("pack:2 numa:2 core:2 pu:2")
    machine_info(root, "gpu8-node")
    groups = [o for o in root.iter("object") if o.get("type") == "Group"]
    assert len(groups) == 4
    for g, grp in enumerate(groups):
        base = 0x40 * g
        p = g // 2
        if g % 2 == 0:
            hb = host_bridge(grp, base, base + 0x3f)
            switch_pair(hb, f"{base:02x}:01.0", base + 0x01, 4 * p)
            switch_pair(hb, f"{base:02x}:02.0", base + 0x05, 4 * p + 1)
        else:
            hb = host_bridge(grp, base, base + 0x1f)
            switch_pair(hb, f"{base:02x}:01.0", base + 0x01, 4 * p + 2)
            hb = host_bridge(grp, base + 0x20, base + 0x3f)
            switch_pair(hb, f"{base + 0x20:02x}:01.0", base + 0x21, 4 * p + 3)
    write(root, "gpu8-nic8-2socket.xml")


def cpu2():
    """2 packages, 1 NUMA node each; a BMC VGA (not a GPU), one Ethernet NIC, one NVMe disk."""
    root = synthetic("pack:2 numa:1 core:4 pu:2")
    machine_info(root, "cpu-node")
    packs = [o for o in root.iter("object") if o.get("type") == "Package"]
    hb = host_bridge(packs[0], 0x00, 0x3f)
    pci_dev(hb, "00:1f.0", "0300 [1a03:2000] [1a03:2000] 52", "ASPEED Technology, Inc.", "ASPEED Graphics Family")
    rp = pci_bridge(hb, "00:01.0", 1, 0x01, 0x01, "8086:352a")
    e = pci_dev(rp, "01:00.0", "0200 [8086:1593] [8086:0005] 02", "Intel Corporation",
                "Ethernet Controller E810-C for SFP")
    os_dev(e, "ens1f0", 2, None, [("Address", "b4:96:91:00:00:01")])
    hb = host_bridge(packs[1], 0x80, 0xbf)
    rp = pci_bridge(hb, "80:01.0", 1, 0x81, 0x81, "8086:352a")
    n = pci_dev(rp, "81:00.0", "0108 [144d:a80a] [144d:a801] 00", "Samsung Electronics Co Ltd", "NVMe SSD")
    os_dev(n, "nvme0n1", 0, "Disk", [("Size", "1875374424")])
    write(root, "cpu-2socket.xml")


def aws():
    """1 package, 2 NUMA nodes, like a cloud VM: an A10G GPU (CUDA + OpenCL) behind one switch
    with a plain ENA Ethernet NIC; an EFA (RDMA) NIC on another root port of the same host bridge;
    the VM's VGA with an OpenCL device (not a GPU); a Trainium accelerator (1d0f class 0x0880, no
    OS device); a second EFA on NUMA node 1."""
    root = synthetic("pack:1 numa:2 core:2 pu:2")
    machine_info(root, "aws-node")
    numa_parents = []
    for o in root.iter("object"):
        if any(c.get("type") == "NUMANode" for c in o):
            numa_parents.append(o)
    assert len(numa_parents) == 2, numa_parents
    hb = host_bridge(numa_parents[0], 0x00, 0x3f)
    rp = pci_bridge(hb, "00:01.0", 1, 0x01, 0x03, "8086:352a")
    up = pci_bridge(rp, "01:00.0", 2, 0x02, 0x03, "1000:c030")
    d0 = pci_bridge(up, "02:00.0", 3, 0x03, 0x03, "1000:c030")
    d1 = pci_bridge(up, "02:01.0", 3, 0x04, 0x04, "1000:c030")
    g = pci_dev(d0, "03:00.0", "0302 [10de:2237] [10de:152f] a1", "NVIDIA Corporation", "GA102GL [A10G]")
    os_dev(g, "cuda0", 5, "CUDA", [("Backend", "CUDA"), ("GPUModel", "NVIDIA A10G")])
    os_dev(g, "opencl0d0", 5, "OpenCL", [("Backend", "OpenCL"), ("GPUModel", "NVIDIA A10G")])
    ena = pci_dev(d1, "04:00.0", "0200 [1d0f:ec20] [1d0f:ec20] 00", "Amazon.com, Inc.", "Elastic Network Adapter (ENA)")
    os_dev(ena, "ens5", 2, None, [("Address", "0a:00:00:00:00:01")])
    rp2 = pci_bridge(hb, "00:02.0", 1, 0x10, 0x10, "8086:352a")
    efa = pci_dev(rp2, "10:00.0", "0200 [1d0f:efa1] [1d0f:efa1] 00", "Amazon.com, Inc.", "Elastic Fabric Adapter (EFA)")
    os_dev(efa, "efa_0", 3, "OpenFabrics", [("NodeGUID", "0000:0000:0000:0001")])
    vga = pci_dev(hb, "00:03.0", "0300 [1d0f:1111] [0000:0000] 00", "Amazon.com, Inc.", "Device 1111")
    os_dev(vga, "opencl1d0", 5, "OpenCL", [("Backend", "OpenCL")])
    rp3 = pci_bridge(hb, "00:04.0", 1, 0x20, 0x20, "8086:352a")
    pci_dev(rp3, "20:00.0", "0880 [1d0f:7164] [1d0f:0000] 00", "Amazon.com, Inc.", "Trainium")
    hb2 = host_bridge(numa_parents[1], 0x40, 0x7f)
    rp4 = pci_bridge(hb2, "40:01.0", 1, 0x41, 0x41, "8086:352a")
    efa2 = pci_dev(rp4, "41:00.0", "0200 [1d0f:efa1] [1d0f:efa1] 00", "Amazon.com, Inc.", "Elastic Fabric Adapter (EFA)")
    os_dev(efa2, "efa_1", 3, "OpenFabrics", [("NodeGUID", "0000:0000:0000:0002")])
    write(root, "aws-mixed.xml")


if __name__ == "__main__":
    gpu8()
    cpu2()
    aws()
