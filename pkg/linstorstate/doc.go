// Package linstorstate judges the state LINSTOR reports, as pure functions of golinstor's
// data types: node types, which replicas are copies of data, the last copies a removal
// would take, what an evacuation is waiting for, and what makes an upgrade unsafe. The
// planners decide from these judgements; pkg/linstor talks to LINSTOR.
package linstorstate
