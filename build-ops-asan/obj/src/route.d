build-ops-asan/obj/src/route.o: src/route.c src/conf.h src/route.h
src/conf.h:
src/route.h:
