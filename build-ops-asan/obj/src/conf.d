build-ops-asan/obj/src/conf.o: src/conf.c src/conf.h src/net.h
src/conf.h:
src/net.h:
