build-ops-asan/obj/replica/replica.o: replica/replica.c replica/replica.h \
 src/wire.h
replica/replica.h:
src/wire.h:
