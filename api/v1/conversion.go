package v1

// Hub marks v1 as the conversion hub; every other version converts through it.
func (*LinstorCluster) Hub()                {}
func (*LinstorSatelliteConfiguration) Hub() {}
func (*LinstorSatellite) Hub()              {}
