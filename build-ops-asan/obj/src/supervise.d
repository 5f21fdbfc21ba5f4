build-ops-asan/obj/src/supervise.o: src/supervise.c src/conf.h src/log.h \
 src/registry.h src/net.h src/supervise.h
src/conf.h:
src/log.h:
src/registry.h:
src/net.h:
src/supervise.h:
