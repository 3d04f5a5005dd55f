# plots.mk — figure rules, included by the Makefile.
#   make figures RESULTS=file.h5 [BASELINE=algo]   every figure kind the file's cells allow,
#                                                  into plots/out/<stem>*.png and .pdf
BASELINE ?= naive_sort
figures: $(BUILD)/topkp
	TOPKP=$(BUILD)/topkp BASELINE=$(BASELINE) bash scripts/figures.sh $(RESULTS)
