build-ops-asan/obj/replica/examples/sleep.o: replica/examples/sleep.c \
 replica/replica.h
replica/replica.h:
