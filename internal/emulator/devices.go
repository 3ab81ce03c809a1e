package emulator

import "strings"

// Constructors of the block devices real hosts have besides blank data disks, for
// tests and simulated hosts. Each says whether LINSTOR offers it (lsblk.go
// filterDeviceCandidates); docs/linstor-semantics.md has the table.

// Partition is partition n of a whole disk as the kernel names it (sda1, nvme0n1p1,
// mmcblk0p1). Never offered: it has a parent, and its disk then has a child.
func Partition(disk Disk, n int, size int64, fsType string) Disk {
	return Disk{Device: partitionName(disk.Device, n), Type: TypePart, Parents: []string{disk.kname()}, Size: size,
		Rotational: disk.Rotational, WWN: disk.WWN, FSType: fsType}
}

// LoopDevice is /dev/loop<n> over a file or device. Offered when larger than 1 GiB
// with no signature, whatever it holds: a loop device has no parent.
func LoopDevice(n int, size int64, backing string) Disk {
	return Disk{Device: "/dev/loop" + itoa(n), Type: TypeLoop, Size: size, Backing: backing}
}

// Zvol is the index-th zvol of a host, dataset "<pool>/<name>": /dev/zd<16*index> (a
// zvol takes 16 minors, ZVOL_MINOR_BITS), linked as /dev/zvol/<dataset>. Offered when
// larger than 1 GiB with no signature and no partitions.
func Zvol(index int, dataset string, size int64) Disk {
	return Disk{Device: "/dev/zd" + itoa(16*index), Size: size, Links: []string{"/dev/zvol/" + dataset}}
}

// DeviceMapper is device-mapper device dm-<n> named name, of lsblk type typ (TypeLVM,
// TypeCrypt, TypeMpath, TypeDM), made from parents. Offered only without parents (a
// bare target such as dm-zero): every LVM, crypt or multipath device has a PKNAME.
func DeviceMapper(n int, name, typ string, size int64, parents ...string) Disk {
	return Disk{Device: "/dev/mapper/" + name, KName: "/dev/dm-" + itoa(n), Type: typ, Parents: parents, Size: size,
		Links: []string{"/dev/disk/by-id/dm-name-" + name}}
}

// MDArray is md array /dev/md<n> of the given level (TypeRAID1, "raid5", ...) over
// members. Never offered: its members are its parents; they carry linux_raid_member.
func MDArray(n int, level string, size int64, members ...string) Disk {
	return Disk{Device: "/dev/md" + itoa(n), Type: level, Parents: members, Size: size}
}

// SANPaths are the SCSI paths through which a host sees one LUN of shared storage,
// identified by its WWN ("0x600a098038303053..."): one device per path, all Shared, with
// the LUN's serial and WWN. Without multipathd each path is a disk of its own, and
// LINSTOR offers every one; udev points the LUN's by-id links at one path. The same
// call on another node's machine is the same LUN there.
func SANPaths(wwn, serial string, size int64, devices ...string) []Disk {
	var out []Disk
	for i, dev := range devices {
		d := Disk{Device: dev, Size: size, Rotational: true, Model: "MSA 2060 FC", Serial: serial, WWN: wwn, Shared: true}
		if i == 0 {
			d.Links = []string{"/dev/disk/by-id/wwn-" + wwn, "/dev/disk/by-id/scsi-3" + strings.TrimPrefix(wwn, "0x")}
		}
		out = append(out, d)
	}
	return out
}

// Multipath is paths as multipathd holds them: each path marked mpath_member by udev
// and held by the multipath map dm-<n> named name, made from all of them. LINSTOR
// offers none of them: the paths have a FSTYPE and a child, the map has parents.
func Multipath(n int, name string, paths []Disk) []Disk {
	if len(paths) == 0 {
		return nil
	}
	var out []Disk
	var parents []string
	for _, p := range paths {
		p = p.clone()
		p.FSType, p.Links = FSTypeMpathMember, nil
		out = append(out, p)
		parents = append(parents, p.kname())
	}
	m := DeviceMapper(n, name, TypeMpath, paths[0].Size, parents...)
	m.WWN, m.Shared, m.Rotational = paths[0].WWN, paths[0].Shared, paths[0].Rotational
	m.Links = append(m.Links, "/dev/disk/by-id/dm-uuid-mpath-3"+strings.TrimPrefix(paths[0].WWN, "0x"))
	return append(out, m)
}

// HostDevices are the block devices a typical node has besides its data disks:
//
//	/dev/vda     100 GiB system disk (partitioned)          not offered: children
//	  vda1       512 MiB EFI system partition, vfat         not offered: a partition
//	  vda2       1 GiB /boot, ext4
//	  vda3       48 GiB LVM PV of the active VG "system"
//	    /dev/mapper/system-root (dm-0) ext4, the root fs   not offered: has a parent
//	  vda4       50 GiB vdev of the imported zpool "tank"
//	/dev/zd0     32 GiB zvol tank/vm-disk-0, a VM's disk    OFFERED: no signature shows
//	/dev/loop0   64 MiB snap, squashfs                      not offered: small, signature
//	/dev/loop1   20 GiB over a VM image file                OFFERED: no signature shows
//	/dev/sr0     cloud-init config drive, iso9660           not offered: small, signature
//
// What LINSTOR offers here (/dev/zd0, /dev/loop1) holds data (Disk.Data): a device
// pool made on it is recorded as destroying it. The names stay off sd*, nvme* and
// vdb-vdz, so tests add their data disks beside them.
func HostDevices(node string) []Disk {
	vda := VirtioDisk(node, "/dev/vda", 100<<30)
	vda.Partitioned = true
	efi := Partition(vda, 1, 512<<20, "vfat")
	boot := Partition(vda, 2, 1<<30, "ext4")
	pv := Partition(vda, 3, 48<<30, FSTypeLVM)
	pv.Pool = "system"
	zfs := Partition(vda, 4, 50<<30, FSTypeZFS)
	zfs.Pool = "tank"
	root := DeviceMapper(0, "system-root", TypeLVM, 48<<30, pv.Device)
	root.FSType = "ext4"
	zvol := Zvol(0, "tank/vm-disk-0", 32<<30)
	zvol.Data = "VM disk"
	snap := LoopDevice(0, 64<<20, "/var/lib/snapd/snaps/core22_1380.snap")
	snap.FSType = "squashfs"
	image := LoopDevice(1, 20<<30, "/var/lib/images/vm-1.img")
	image.Data = "VM image"
	cidata := Disk{Device: "/dev/sr0", Type: TypeROM, Size: 374 << 10, Model: "QEMU DVD-ROM", FSType: "iso9660"}
	return []Disk{vda, efi, boot, pv, zfs, root, zvol, snap, image, cidata}
}
