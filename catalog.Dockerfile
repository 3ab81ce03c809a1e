# The catalog image: opm serving a file-based catalog whose bundles reference bundle
# images. Build it with `make catalog-build`, whose build context is the catalog it renders
# from the pushed bundle images (bin/catalog-build), not the repository's catalog/ (bundles
# inline, image ""). OPM_IMAGE is a build argument so that a machine that cannot pull it can
# pass its own (hack/build-base-images.sh makes one); the default is opm's public image.
ARG OPM_IMAGE=quay.io/operator-framework/opm:v1.73.0
FROM ${OPM_IMAGE}
ENTRYPOINT ["/bin/opm"]
CMD ["serve", "/configs", "--cache-dir=/tmp/cache"]
ADD catalog /configs
RUN ["/bin/opm", "serve", "/configs", "--cache-dir=/tmp/cache", "--cache-only"]
LABEL operators.operatorframework.io.index.configs.v1=/configs
