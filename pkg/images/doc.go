// Package images is the operator release's image set: one pinned image per operand
// component, compiled in and overridable by RELATED_IMAGE_* environment variables (what
// OLM sets from the CSV's relatedImages, so disconnected mirrors work), and the DRBD
// module loader image chosen from a node's osImage, with what that operating system offers
// the loader (DRBDKernelModules) and the rest of the satellite pod (Host).
package images
