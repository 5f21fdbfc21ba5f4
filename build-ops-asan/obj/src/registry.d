build-ops-asan/obj/src/registry.o: src/registry.c src/conf.h \
 src/registry.h src/net.h src/upstream.h
src/conf.h:
src/registry.h:
src/net.h:
src/upstream.h:
