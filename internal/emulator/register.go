package emulator

import (
	"context"
	"net"

	lapi "github.com/LINBIT/golinstor/client"
)

// RegisterSatellite registers a satellite node at ip with an LVM thin pool "thin"
// through LINSTOR's API, as the operator would: the setup tests of API clients share.
func RegisterSatellite(ctx context.Context, lc *lapi.Client, name, ip string) error {
	err := lc.Nodes.Create(ctx, lapi.Node{Name: name, Type: "SATELLITE", NetInterfaces: []lapi.NetInterface{{
		Name: "default", Address: net.ParseIP(ip), SatellitePort: 3366, SatelliteEncryptionType: "PLAIN"}}})
	if err != nil {
		return err
	}
	return lc.Nodes.CreateStoragePool(ctx, name, lapi.StoragePool{StoragePoolName: "thin", ProviderKind: lapi.LVM_THIN,
		Props: map[string]string{"StorDriver/LvmVg": "vg", "StorDriver/ThinPool": "thin"}})
}
