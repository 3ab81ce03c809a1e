package satellite

import (
	lapi "github.com/LINBIT/golinstor/client"

	linstorv1 "github.com/linstor-operator/linstor-operator/api/v1"
)

// Provider maps a pool spec to LINSTOR's provider kind and driver properties,
// applying the documented defaults for unset names.
func Provider(p *linstorv1.StoragePool) (lapi.ProviderKind, map[string]string) {
	or := func(v, def string) string {
		if v != "" {
			return v
		}
		return def
	}
	switch {
	case p.LvmPool != nil:
		return lapi.LVM, map[string]string{"StorDriver/LvmVg": or(p.LvmPool.VolumeGroup, p.Name)}
	case p.LvmThinPool != nil:
		return lapi.LVM_THIN, map[string]string{"StorDriver/LvmVg": or(p.LvmThinPool.VolumeGroup, "linstor_"+p.Name), "StorDriver/ThinPool": or(p.LvmThinPool.ThinPool, p.Name)}
	case p.ZfsPool != nil:
		return lapi.ZFS, map[string]string{"StorDriver/ZPool": or(p.ZfsPool.ZPool, p.Name)}
	case p.ZfsThinPool != nil:
		return lapi.ZFS_THIN, map[string]string{"StorDriver/ZPoolThin": or(p.ZfsThinPool.ZPool, p.Name)}
	case p.FilePool != nil:
		return lapi.FILE, map[string]string{"StorDriver/FileDir": or(p.FilePool.Directory, "/var/lib/linstor-pools/"+p.Name)}
	case p.FileThinPool != nil:
		return lapi.FILE_THIN, map[string]string{"StorDriver/FileDir": or(p.FileThinPool.Directory, "/var/lib/linstor-pools/"+p.Name)}
	}
	return "", nil
}
