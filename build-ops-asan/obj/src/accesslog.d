build-ops-asan/obj/src/accesslog.o: src/accesslog.c src/accesslog.h \
 src/conf.h src/reqlog.h src/worker.h
src/accesslog.h:
src/conf.h:
src/reqlog.h:
src/worker.h:
